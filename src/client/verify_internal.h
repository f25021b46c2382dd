// Shared by the verify_*.cc files: the state of one verify run and the helpers every check uses.
// Not part of the library's interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/client/openai_stream.h"
#include "src/client/sse.h"
#include "src/client/verify.h"

namespace k3::client::verify_internal {

// One streamed chat completion, kept for the checks that judge it.
struct StreamCapture {
  Status transport;  // ok, or the transport / HTTP failure
  HttpResponse response;
  std::string raw;  // the body as received
  SseReader sse;
  ChatStreamAccumulator chat;
  std::vector<std::string> events;  // every event payload in arrival order ("[DONE]" included)
};

struct Run {
  const VerifyOptions& options;
  HttpClient client;
  std::string model;
  std::optional<StreamCapture> stream;  // from stream-equals-non-stream, judged by sse-format

  explicit Run(const VerifyOptions& o) : options(o), client(o.http) {}

  // POST /v1/chat/completions (non-streaming) with the run's model filled in.
  Result<HttpResponse> Chat(nlohmann::json body);
  // Streams one chat completion into a StreamCapture.
  StreamCapture ChatStream(nlohmann::json body);
};

// One non-streaming chat completion: the answer, its evidence and its parse. `failure` is set when the
// request failed (transport or HTTP status) or the answer is not a chat.completion; it is the check's
// result then.
struct ChatAnswer {
  std::optional<CheckResult> failure;
  HttpResponse response;
  std::string evidence;  // Evidence(response); empty when no answer came
  ChatResult result;
};
ChatAnswer AskChat(Run& run, const nlohmann::json& request);

// Times one check and fills id, title and seconds.
class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

CheckResult Pass(std::string detail, std::string evidence);
CheckResult Fail(std::string detail, std::string evidence = "");
CheckResult Skip(std::string detail);

// "HTTP 200 in 12 ms: <body snippet>"
std::string Evidence(const HttpResponse& response);

CheckResult CheckModels(Run& run);
CheckResult CheckHealth(Run& run);
CheckResult CheckToolCalls(Run& run, const std::string& tool_choice);
CheckResult CheckReasoning(Run& run);
CheckResult CheckStreamEqualsNonStream(Run& run);
CheckResult CheckSseFormat(Run& run);
CheckResult CheckErrorShape(Run& run);
// width x height RGB bytes of a smooth pattern (not noise), so a large PNG stays small on the wire.
std::vector<uint8_t> PatternImage(int width, int height);
// A 4xx whose message says the model takes no images (k3 serve, vLLM, SGLang wordings).
bool SaysNoImages(const HttpResponse& response);
// Image prompt tokens against the reference processor (verify_vision_check.cc).
CheckResult CheckVision(Run& run);
// Runs the long-context request, then its repeat: two results (long-context, prefix-cache).
std::pair<CheckResult, CheckResult> CheckLongContextAndPrefixCache(Run& run);

}  // namespace k3::client::verify_internal
