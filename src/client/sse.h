// SseReader: an incremental reader of an OpenAI-style server-sent-event stream that also checks its
// framing. Events are `data: <payload>` lines ended by a blank line; the stream ends with
// `data: [DONE]`. Comment lines (":...") and the event/id/retry fields are allowed and ignored.
//
// Framing problems are recorded, not thrown, so a caller can both use the payloads and report what was
// wrong: a line that is no SSE field, data after [DONE], a stream that ends inside an event or without
// [DONE]. Two JSON objects on consecutive data lines with no blank line between them form one event
// whose payload is not JSON; the JSON layer (openai_stream.h) reports that.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3::client {

class SseReader {
 public:
  // Feeds raw body bytes (any split). Complete events are appended to the pending payloads.
  void Feed(std::string_view bytes);
  // End of the body: a partial line or event and a missing [DONE] become errors.
  void Finish();

  // The payloads of the events completed since the last call ("[DONE]" included).
  std::vector<std::string> TakeEvents();

  bool saw_done() const { return saw_done_; }
  int events() const { return events_; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void OnLine(std::string_view line);
  void Dispatch();
  void AddError(std::string message);

  std::string partial_;  // bytes of an unfinished line
  std::string data_;     // data lines of the current event, joined with '\n'
  bool has_data_ = false;
  bool saw_done_ = false;
  int line_no_ = 0;
  int events_ = 0;
  std::vector<std::string> pending_;
  std::vector<std::string> errors_;
};

}  // namespace k3::client
