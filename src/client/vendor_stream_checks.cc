// The stream and finish-reason checks of the vendor suite. usage-chunk reads the event payloads of one
// stream in order: with stream_options.include_usage the usage chunk (choices [] + usage) must come once,
// after the chunk carrying finish_reason and right before [DONE], and count the prompt as the
// non-streamed answer does. finish-reason judges every finish_reason the suite has seen (vLLM's names:
// stop, length, tool_calls; a server that leaks its stop token writes e.g. stop_163586).
#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "src/client/vendor_internal.h"

namespace k3::client::vendor_internal {
namespace {

using nlohmann::json;
using verify_internal::Fail;
using verify_internal::Pass;

bool HasUsage(const json& chunk) {
  auto usage = chunk.find("usage");
  return usage != chunk.end() && usage->is_object();
}

bool HasFinishReason(const json& chunk) {
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) return false;
  for (const json& choice : *choices) {
    if (choice.is_object() && choice.contains("finish_reason") && choice["finish_reason"].is_string())
      return true;
  }
  return false;
}

// Whether `reason` carries a number (a token id): "stop_163586", "eos 2", "163586".
bool HasDigit(const std::string& reason) {
  for (char c : reason) {
    if (std::isdigit(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

}  // namespace

CheckResult CheckUsageChunk(VendorRun& vr) {
  const json request = {{"messages", {{{"role", "user"}, {"content", "Count from one to five."}}}},
                        {"max_tokens", 16},
                        {"temperature", 0}};
  const ChatAnswer plain = vr.Ask("usage-chunk", request);
  if (plain.failure) return *plain.failure;
  const StreamCapture s = vr.Stream("usage-chunk", request);
  if (!s.transport.ok()) return Fail("streamed: " + s.transport.message());
  const std::string evidence = fmt::format("{} events: {}", s.events.size(), Snippet(s.raw, 300));
  std::vector<size_t> usage_at;
  size_t finish_at = s.events.size(), done_at = s.events.size();
  for (size_t i = 0; i < s.events.size(); ++i) {
    if (s.events[i] == "[DONE]") {
      done_at = i;
      continue;
    }
    const json chunk = json::parse(s.events[i], nullptr, false);
    if (!chunk.is_object()) continue;  // sse framing is the guide suite's sse-format check
    if (HasUsage(chunk)) {
      usage_at.push_back(i);
      if (!chunk["choices"].is_array() || !chunk["choices"].empty()) {
        return Fail(
            fmt::format("event {} carries usage and non-empty choices (the usage chunk has choices [])", i),
            evidence);
      }
    }
    if (HasFinishReason(chunk) && finish_at == s.events.size()) finish_at = i;
  }
  if (usage_at.empty()) {
    return Fail("no usage chunk although stream_options.include_usage was true", evidence);
  }
  if (usage_at.size() > 1) {
    return Fail(fmt::format("{} chunks carry usage (events {}); one usage chunk expected", usage_at.size(),
                            fmt::join(usage_at, ", ")),
                evidence);
  }
  const size_t at = usage_at.front();
  if (finish_at == s.events.size()) return Fail("no chunk carries a finish_reason", evidence);
  if (at < finish_at) {
    return Fail(
        fmt::format("the usage chunk (event {}) comes before the finish_reason (event {})", at, finish_at),
        evidence);
  }
  if (done_at == s.events.size()) return Fail("no [DONE] event", evidence);
  if (at + 1 != done_at) {
    return Fail(
        fmt::format("the usage chunk is event {}, but the last before [DONE] is event {}", at, done_at - 1),
        evidence);
  }
  const Usage& streamed = *s.chat.result().usage;
  if (!plain.result.usage || plain.result.usage->prompt_tokens != streamed.prompt_tokens) {
    return Fail(
        fmt::format("the usage chunk says prompt_tokens {}, the non-streamed answer {}",
                    streamed.prompt_tokens, plain.result.usage ? plain.result.usage->prompt_tokens : -1),
        evidence);
  }
  if (streamed.completion_tokens < 0) return Fail("the usage chunk has no completion_tokens", evidence);
  return Pass(
      fmt::format("usage chunk is event {} of {}: after the finish_reason (event {}), last before [DONE]; "
                  "prompt_tokens {} as non-streamed",
                  at, s.events.size(), finish_at, streamed.prompt_tokens),
      evidence);
}

CheckResult CheckFinishReasons(VendorRun& vr) {
  // One more answer, cut by max_tokens (length, or stop if that one token ended the message).
  const json request = {
      {"messages", {{{"role", "user"}, {"content", "Write a long story about a lighthouse."}}}},
      {"max_tokens", 1},
      {"temperature", 0}};
  const ChatAnswer cut = vr.Ask("max_tokens 1", request);
  if (cut.failure) return *cut.failure;
  std::vector<std::string> problems;
  std::map<std::string, int> counts;
  for (const SeenFinish& seen : vr.finishes) {
    const std::string& reason = seen.finish_reason;
    ++counts[reason.empty() ? "(none)" : reason];
    if (reason == "stop" || reason == "length" || reason == "tool_calls") continue;
    if (reason.empty()) {
      problems.push_back(seen.request + ": no finish_reason");
    } else if (HasDigit(reason)) {
      problems.push_back(
          fmt::format("{}: finish_reason '{}' is a raw token id, not a reason", seen.request, reason));
    } else {
      problems.push_back(
          fmt::format("{}: finish_reason '{}' is not one of stop, length, tool_calls", seen.request, reason));
    }
  }
  std::vector<std::string> tally;
  for (const auto& [reason, n] : counts) tally.push_back(fmt::format("{} x{}", reason, n));
  const std::string summary = fmt::format("{} answers: {}", vr.finishes.size(), fmt::join(tally, ", "));
  if (!problems.empty()) {
    const size_t shown = std::min<size_t>(problems.size(), 4);
    return Fail(
        fmt::format("{}{} ({})",
                    fmt::join(problems.begin(), problems.begin() + static_cast<std::ptrdiff_t>(shown), "; "),
                    problems.size() > shown ? fmt::format("; and {} more", problems.size() - shown) : "",
                    summary),
        cut.evidence);
  }
  return Pass(summary, cut.evidence);
}

}  // namespace k3::client::vendor_internal
