// k3 verify: the deployment checklist of the user's guide run against any OpenAI-compatible endpoint,
// using only the OpenAI API and Prometheus /metrics. Each check ends pass, fail or skip with evidence
// (HTTP status, timing, a snippet of what came back).
//
// Checks, in order: models, health, tool-calls-auto, tool-calls-required, reasoning, long-context,
// prefix-cache, stream-equals-non-stream, sse-format, error-shape, vision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/client/endpoint.h"
#include "src/client/http.h"
#include "src/image/config.h"

namespace k3::client {

enum class Outcome { kPass, kFail, kSkip };
const char* OutcomeName(Outcome outcome);  // "pass", "fail", "skip"

struct CheckResult {
  std::string id;     // "tool-calls-auto"
  std::string title;  // "tools with tool_choice auto yield schema-valid tool_calls"
  Outcome outcome = Outcome::kSkip;
  std::string detail;    // what was found (the reason, for a failure or skip)
  std::string evidence;  // "HTTP 200 in 12 ms: {...}"
  double seconds = 0;
};

struct VerifyOptions {
  Endpoint endpoint;
  std::string model;            // empty: the first model /v1/models lists
  int64_t long_context = 4096;  // prompt tokens of the long-context check
  HttpOptions http;
  int max_tokens = 256;  // for the tool-call and reasoning requests
  bool vision = true;    // false: the vision check is skipped (--no-vision)
  // The image processor the endpoint's model should follow (vision check): K3's by default.
  image::ProcessorConfig image_processor = image::K3ProcessorConfig();
};

struct VerifyReport {
  std::string endpoint;
  std::string model;
  std::vector<CheckResult> checks;
  int failures() const;
  int count(Outcome outcome) const;
};

VerifyReport RunVerify(const VerifyOptions& options);

}  // namespace k3::client
