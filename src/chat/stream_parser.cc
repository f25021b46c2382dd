// Streaming parse: re-parse the accumulated text in partial mode and send what is new. Parsing the whole
// text each time keeps the result identical to the non-streaming parse; outputs are at most a few
// thousand tokens per request, and the scan is linear.
#include "src/chat/stream_parser.h"

namespace k3::chat {

OutputDelta StreamParser::Diff(ParsedOutput parsed) {
  OutputDelta delta;
  // A partial parse is a prefix of every later one, so only the tail past what was sent is new.
  if (parsed.reasoning.size() > reasoning_sent_) {
    delta.reasoning = parsed.reasoning.substr(reasoning_sent_);
    reasoning_sent_ = parsed.reasoning.size();
  }
  if (parsed.content.size() > content_sent_) {
    delta.content = parsed.content.substr(content_sent_);
    content_sent_ = parsed.content.size();
  }
  for (size_t i = calls_sent_; i < parsed.tool_calls.size(); ++i)
    delta.tool_calls.push_back(parsed.tool_calls[i]);
  calls_sent_ = std::max(calls_sent_, parsed.tool_calls.size());
  return delta;
}

OutputDelta StreamParser::Push(std::string_view text) {
  text_.append(text);
  return Diff(ParseOutput(text_, options_, /*partial=*/true));
}

OutputDelta StreamParser::Finish() { return Diff(ParseOutput(text_, options_, /*partial=*/false)); }

}  // namespace k3::chat
