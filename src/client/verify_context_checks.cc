// The long-context and prefix-cache checks of k3 verify. The client has no tokenizer (it must work with
// any server), so it calibrates: two short prompts of known word counts give the server's tokens per
// filler word from usage.prompt_tokens, and the long prompt is sized from that. The long prompt is then
// sent again; cache hits show as usage.prompt_tokens_details.cached_tokens or as a rise in a
// *prefix_cache_hits_total counter on /metrics.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "src/client/metrics_text.h"
#include "src/client/verify_internal.h"

namespace k3::client::verify_internal {
namespace {

using nlohmann::json;

// Ordinary words, so the filler tokenizes like text (about one token each in large vocabularies).
constexpr const char* kWords[] = {
    "river",  "stone",  "garden", "window", "morning", "silver", "market", "letter", "forest", "engine",
    "harbor", "valley", "pencil", "summer", "winter",  "bridge", "candle", "mirror", "planet", "orange",
    "yellow", "little", "people", "number", "simple",  "travel", "island", "castle", "doctor", "friend",
    "school", "animal", "circle", "dinner", "family",  "golden", "hunter", "jacket", "kitten", "ladder"};

std::string Filler(int64_t words, uint64_t seed) {
  std::string out;
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < words; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    if (i > 0) out += (i % 12 == 0) ? ". " : " ";
    out += kWords[(state >> 33) % (sizeof(kWords) / sizeof(kWords[0]))];
  }
  return out;
}

struct Sent {
  HttpResponse response;
  ChatResult result;
};

Result<Sent> SendPrompt(Run& run, const std::string& text) {
  const json request = {
      {"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", 1}, {"temperature", 0}};
  K3_ASSIGN_OR_RETURN(HttpResponse response, run.Chat(request));
  auto body = ParseJsonAnswer(response, "POST /v1/chat/completions");
  if (!body.ok())
    return Status(body.status().code(), body.status().message() + " [" + Evidence(response) + "]");
  auto result = ParseChatCompletion(*body);
  if (!result.ok()) return result.status();
  if (!result->usage || result->usage->prompt_tokens <= 0) {
    return DataLoss("the answer has no usage.prompt_tokens [{}]", Evidence(response));
  }
  return Sent{std::move(response), std::move(*result)};
}

// The prefix-cache hit counter on /metrics, or nullopt when there is none (or no /metrics).
std::optional<double> CacheHits(Run& run, std::string* name) {
  auto response = run.client.Get(run.options.endpoint.Url("/metrics"), run.options.endpoint.JsonHeaders());
  if (!response.ok() || response->status != 200) return std::nullopt;
  const auto samples = ParseMetricsText(response->body);
  *name = FirstNameWithSuffix(samples, "prefix_cache_hits_total");
  return SumBySuffix(samples, "prefix_cache_hits_total");
}

}  // namespace

std::pair<CheckResult, CheckResult> CheckLongContextAndPrefixCache(Run& run) {
  const int64_t target = run.options.long_context;
  constexpr int64_t kShort = 64, kLong = 320;
  auto a = SendPrompt(run, Filler(kShort, 1));
  if (!a.ok()) return {Fail("calibration request: " + a.status().message()), Skip("no long prompt was sent")};
  auto b = SendPrompt(run, Filler(kLong, 1));
  if (!b.ok()) return {Fail("calibration request: " + b.status().message()), Skip("no long prompt was sent")};
  const double per_word =
      static_cast<double>(b->result.usage->prompt_tokens - a->result.usage->prompt_tokens) /
      static_cast<double>(kLong - kShort);
  if (per_word <= 0) {
    return {Fail(fmt::format(
                "calibration: prompt_tokens did not grow with the prompt ({} for {} words, {} for {})",
                a->result.usage->prompt_tokens, kShort, b->result.usage->prompt_tokens, kLong)),
            Skip("no long prompt was sent")};
  }
  const double overhead = static_cast<double>(a->result.usage->prompt_tokens) - per_word * kShort;
  const int64_t words = std::max<int64_t>(1, static_cast<int64_t>(std::ceil((target - overhead) / per_word)));
  const int64_t nonce = std::chrono::system_clock::now().time_since_epoch().count() % 1000000007;
  const std::string prompt = fmt::format("Document {}. {}", nonce, Filler(words, 2));

  auto first = SendPrompt(run, prompt);
  if (!first.ok()) {
    return {Fail(fmt::format("the {}-word prompt (about {} tokens) failed: {}", words, target,
                             first.status().message())),
            Skip("the long prompt failed")};
  }
  const int64_t got = first->result.usage->prompt_tokens;
  const std::string first_evidence = fmt::format("{:.2f} tokens/word; 1st: prompt_tokens={} in {:.0f} ms",
                                                 per_word, got, first->response.elapsed_s * 1000);
  CheckResult context =
      got >= target * 9 / 10
          ? Pass(fmt::format("prompt_tokens={} (asked for {})", got, target), first_evidence)
          : Fail(fmt::format("the server counted only {} prompt tokens, asked for {}", got, target),
                 first_evidence);

  std::string metric;
  const std::optional<double> before = CacheHits(run, &metric);
  auto repeat = SendPrompt(run, prompt);
  if (!repeat.ok()) return {context, Fail("the repeated long prompt failed: " + repeat.status().message())};
  const std::optional<double> after = CacheHits(run, &metric);
  const int64_t cached = repeat->result.usage->cached_tokens;
  std::string evidence = fmt::format("{}; repeat: prompt_tokens={}, cached_tokens={} in {:.0f} ms",
                                     first_evidence, repeat->result.usage->prompt_tokens,
                                     cached < 0 ? std::string("not reported") : std::to_string(cached),
                                     repeat->response.elapsed_s * 1000);
  const bool counters = before && after;
  const double delta = counters ? *after - *before : 0;
  evidence += counters ? fmt::format("; {} +{:.0f}", metric, delta)
                       : std::string("; no prefix_cache_hits counter on /metrics");
  if (cached > 0)
    return {context, Pass(fmt::format("{} of {} prompt tokens came from the cache", cached, got), evidence)};
  if (delta > 0) return {context, Pass(fmt::format("{} rose by {:.0f} tokens", metric, delta), evidence)};
  return {context,
          Fail("no prefix-cache hit: no cached_tokens in usage and no rise of a prefix_cache_hits counter "
               "-- is prefix caching enabled (vLLM: --enable-prefix-caching)?",
               evidence)};
}

}  // namespace k3::client::verify_internal
