// k3 verify against FakeOpenAi over loopback: every check passes against a well-behaved server and each
// one fails (with a reason naming the cause) against a server that breaks exactly that item.
#include "src/client/verify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/client/openai_stream.h"
#include "src/client/testing/fake_openai.h"
#include "src/client/verify_report.h"

namespace k3::client {
namespace {

using testing::FakeOpenAi;
using testing::FakeOpenAiOptions;
using ::testing::HasSubstr;

const std::vector<std::string> kIds = {
    "models",     "health",       "tool-calls-auto", "tool-calls-required",
    "reasoning",  "long-context", "prefix-cache",    "stream-equals-non-stream",
    "sse-format", "error-shape",  "vision"};

VerifyReport VerifyAgainst(const FakeOpenAi& server, const std::string& model = "",
                           const std::string& key = "") {
  VerifyOptions options;
  options.endpoint = *ParseEndpoint(server.url() + "/v1", key);
  options.model = model;
  options.long_context = 500;
  options.http.timeout_s = 10;
  return RunVerify(options);
}

const CheckResult& Check(const VerifyReport& report, const std::string& id) {
  for (const CheckResult& c : report.checks) {
    if (c.id == id) return c;
  }
  static const CheckResult missing{"missing"};
  ADD_FAILURE() << "no check " << id;
  return missing;
}

std::string Dump(const VerifyReport& report) { return FormatVerifyReport(report, ReportFormat::kTable); }

// Every check except those in `failing` passes; those fail with a detail containing `reason`.
void ExpectOnlyFailing(const VerifyReport& report, const std::vector<std::string>& failing,
                       const std::string& reason) {
  ASSERT_EQ(report.checks.size(), kIds.size()) << Dump(report);
  for (const std::string& id : kIds) {
    const CheckResult& c = Check(report, id);
    const bool should_fail = std::find(failing.begin(), failing.end(), id) != failing.end();
    EXPECT_EQ(c.outcome, should_fail ? Outcome::kFail : Outcome::kPass) << id << "\n" << Dump(report);
    if (should_fail) {
      EXPECT_THAT(c.detail, HasSubstr(reason)) << id;
    }
  }
  EXPECT_EQ(report.failures(), static_cast<int>(failing.size()));
}

TEST(VerifyTest, EverythingPassesAgainstAWellBehavedServer) {
  FakeOpenAi server({});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {}, "");
  EXPECT_EQ(report.model, "fake-k3");
  for (const std::string& id : kIds) EXPECT_EQ(Check(report, id).id, id);  // in the documented order
  EXPECT_THAT(Check(report, "reasoning").detail, HasSubstr("field 'reasoning_content'"));
  EXPECT_THAT(Check(report, "tool-calls-required").detail, HasSubstr("\"city\""));
  EXPECT_THAT(Check(report, "long-context").detail, HasSubstr("asked for 500"));
  EXPECT_THAT(Check(report, "prefix-cache").detail, HasSubstr("came from the cache"));
  EXPECT_THAT(Check(report, "models").evidence, HasSubstr("HTTP 200"));
  // PNG 7300x30: resized to the one-side limit, 7168x29 -> padded 7168x56 -> 2 x 256 merged patches.
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("resized 7168x29, padded 7168x56, 512 image tokens"));
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("PNG 7300x30"));
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("JPEG 333x127"));
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("by POST /tokenize"));
}

// A model without a vision tower: the image request is a 400 saying so, which is a skip with the reason.
TEST(VerifyTest, ModelWithoutTowerSkipsVision) {
  FakeOpenAi server({.vision = false});
  const VerifyReport report = VerifyAgainst(server);
  EXPECT_EQ(report.failures(), 0) << Dump(report);
  EXPECT_EQ(Check(report, "vision").outcome, Outcome::kSkip);
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("takes no images"));
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("no vision tower"));
  EXPECT_EQ(report.count(Outcome::kSkip), 1);
}

// vLLM's wordings for a text-only model (or --limit-mm-per-prompt image 0) are skips too; any other 400 for
// an image (here: too large) is a failure.
TEST(VerifyTest, VisionRefusalWordings) {
  for (const char* message :
       {"At most 0 image(s) may be provided in one prompt.", "Kimi-K3-text is not a multimodal model"}) {
    FakeOpenAi server({.image_refusal = message});
    const VerifyReport report = VerifyAgainst(server);
    EXPECT_EQ(Check(report, "vision").outcome, Outcome::kSkip) << message;
    EXPECT_THAT(Check(report, "vision").detail, HasSubstr(message));
  }
  FakeOpenAi server({.image_refusal = "image too large: 51380224 pixels"});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {"vision"}, "the PNG 7300x30 request failed");
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("image too large"));
}

// A server whose image prompt is one token off fails the check, naming both counts.
TEST(VerifyTest, MiscountedImageTokensFail) {
  FakeOpenAi server({.image_token_error = 1});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {"vision"}, "differ from the reference processor");
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("MISMATCH"));
}

// Without /tokenize the text "image WxH" is counted by a request pair.
TEST(VerifyTest, VisionWithoutTokenizeUsesARequestPair) {
  FakeOpenAi server({.tokenize = false});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {}, "");
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("a request pair"));
}

TEST(VerifyTest, NoVisionOptionSkips) {
  FakeOpenAi server({});
  VerifyOptions options;
  options.endpoint = *ParseEndpoint(server.url(), "");
  options.long_context = 500;
  options.vision = false;
  const VerifyReport report = RunVerify(options);
  EXPECT_EQ(Check(report, "vision").outcome, Outcome::kSkip);
  EXPECT_THAT(Check(report, "vision").detail, HasSubstr("--no-vision"));
}

TEST(VerifyTest, HealthFailing) {
  FakeOpenAi server({.health = false});
  ExpectOnlyFailing(VerifyAgainst(server), {"health"}, "HTTP 503");
}

// vLLM without --enable-auto-tool-choice --tool-call-parser: tool_choice auto is a 400 (required works).
TEST(VerifyTest, ToolParserOff) {
  FakeOpenAi server({.auto_tool_choice = false});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {"tool-calls-auto"}, "tool_choice auto was refused");
  EXPECT_THAT(Check(report, "tool-calls-auto").detail, HasSubstr("HTTP 400"));
}

// tool_choice auto lets the model answer in text: that passes (and says so); required must give a call.
TEST(VerifyTest, AutoAnsweredInTextPassesRequiredMustCall) {
  FakeOpenAi server({.tool_calls = false});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {"tool-calls-required"}, "no tool_calls");
  EXPECT_THAT(Check(report, "tool-calls-auto").detail, HasSubstr("answered without a tool call"));
}

// A call written into the content (a parser that does not match the model's format) fails both.
TEST(VerifyTest, ToolCallLeftInContent) {
  FakeOpenAi server({.tool_calls = false, .call_in_content = true});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {"tool-calls-auto", "tool-calls-required"}, "no tool_calls");
  EXPECT_THAT(Check(report, "tool-calls-auto").detail, HasSubstr("the content names get_weather"));
}

TEST(VerifyTest, ToolArgumentsAgainstTheSchema) {
  FakeOpenAi server({.valid_tool_arguments = false});
  ExpectOnlyFailing(VerifyAgainst(server), {"tool-calls-auto", "tool-calls-required"},
                    "do not match the declared schema");
}

TEST(VerifyTest, ThinkingOffReportsReasoningAbsent) {
  FakeOpenAi server({.reasoning_field = ""});
  ExpectOnlyFailing(VerifyAgainst(server), {"reasoning"}, "neither reasoning_content nor reasoning");
}

TEST(VerifyTest, ReasoningFieldNameIsReported) {
  FakeOpenAi server({.reasoning_field = "reasoning"});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {}, "");
  EXPECT_THAT(Check(report, "reasoning").detail, HasSubstr("field 'reasoning'"));
}

TEST(VerifyTest, PrefixCachingOff) {
  FakeOpenAi server({.prefix_cache = false});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {"prefix-cache"}, "no prefix-cache hit");
  EXPECT_THAT(Check(report, "prefix-cache").evidence, HasSubstr("vllm:prefix_cache_hits_total +0"));
}

TEST(VerifyTest, PrefixHitsFromMetricsAlone) {
  FakeOpenAi server({.cached_tokens_in_usage = false});
  const VerifyReport report = VerifyAgainst(server);
  ExpectOnlyFailing(report, {}, "");
  EXPECT_THAT(Check(report, "prefix-cache").detail, HasSubstr("vllm:prefix_cache_hits_total rose by"));
  EXPECT_THAT(Check(report, "prefix-cache").evidence, HasSubstr("cached_tokens=not reported"));

  FakeOpenAi no_evidence({.cached_tokens_in_usage = false, .metrics = false});
  const VerifyReport blind = VerifyAgainst(no_evidence);
  ExpectOnlyFailing(blind, {"prefix-cache"}, "no prefix-cache hit");
  EXPECT_THAT(Check(blind, "prefix-cache").evidence, HasSubstr("no prefix_cache_hits counter on /metrics"));
}

TEST(VerifyTest, StreamingDiffers) {
  FakeOpenAi server({.stream_matches = false});
  ExpectOnlyFailing(VerifyAgainst(server), {"stream-equals-non-stream"}, "content differs at byte 1");
}

TEST(VerifyTest, SseFramingFaults) {
  FakeOpenAi no_done({.sse_done = false});
  ExpectOnlyFailing(VerifyAgainst(no_done), {"sse-format"}, "without 'data: [DONE]'");
  FakeOpenAi no_usage({.sse_usage = false});
  ExpectOnlyFailing(VerifyAgainst(no_usage), {"sse-format"}, "no usage chunk");
  FakeOpenAi glued({.sse_blank_lines = false});
  const VerifyReport report = VerifyAgainst(glued);
  EXPECT_EQ(Check(report, "sse-format").outcome, Outcome::kFail) << Dump(report);
  EXPECT_THAT(Check(report, "sse-format").detail, HasSubstr("not a JSON object"));
}

TEST(VerifyTest, NonOpenAiErrors) {
  FakeOpenAi server({.openai_errors = false});
  ExpectOnlyFailing(VerifyAgainst(server), {"error-shape"}, "not an OpenAI error");
}

TEST(VerifyTest, ModelNotListed) {
  FakeOpenAi server({});
  const VerifyReport report = VerifyAgainst(server, "Kimi-K3");
  EXPECT_EQ(Check(report, "models").outcome, Outcome::kFail);
  EXPECT_THAT(Check(report, "models").detail, HasSubstr("'Kimi-K3' is not listed (listed: fake-k3)"));
  EXPECT_THAT(Check(report, "tool-calls-auto").detail, HasSubstr("does not exist"));
}

TEST(VerifyTest, ApiKey) {
  FakeOpenAi server({.api_key = "sk-test"});
  ExpectOnlyFailing(VerifyAgainst(server, "", "sk-test"), {}, "");
  const VerifyReport without = VerifyAgainst(server);
  EXPECT_EQ(Check(without, "models").outcome, Outcome::kFail);
  EXPECT_THAT(Check(without, "models").detail, HasSubstr("HTTP 401: invalid API key"));
  EXPECT_EQ(Check(without, "tool-calls-auto").outcome, Outcome::kSkip);
}

TEST(VerifyTest, UnreachableEndpointFailsEveryCheckFast) {
  std::string url;
  {
    FakeOpenAi gone({});
    url = gone.url();
  }  // stopped: its port now refuses connections
  VerifyOptions options;
  options.endpoint = *ParseEndpoint(url, "");
  const VerifyReport report = RunVerify(options);
  EXPECT_EQ(report.failures(), static_cast<int>(kIds.size())) << Dump(report);
  EXPECT_THAT(Check(report, "models").detail, HasSubstr("connection refused"));
  EXPECT_THAT(Check(report, "error-shape").detail, HasSubstr("the endpoint is unreachable"));
}

TEST(VerifyReportTest, JsonAndJunit) {
  FakeOpenAi server({.health = false, .vision = false});
  const VerifyReport report = VerifyAgainst(server);
  const auto json = nlohmann::json::parse(FormatVerifyReport(report, ReportFormat::kJson));
  EXPECT_EQ(json["failed"], 1);
  EXPECT_EQ(json["passed"], 9);
  EXPECT_EQ(json["skipped"], 1);
  EXPECT_EQ(json["checks"][10]["outcome"], "skip");
  EXPECT_EQ(json["checks"][1]["id"], "health");
  EXPECT_EQ(json["checks"][1]["outcome"], "fail");
  EXPECT_THAT(json["checks"][1]["evidence"].get<std::string>(), HasSubstr("HTTP 503"));
  const std::string junit = FormatVerifyReport(report, ReportFormat::kJunit);
  EXPECT_THAT(junit, HasSubstr("tests=\"11\" failures=\"1\" skipped=\"1\""));
  EXPECT_THAT(junit, HasSubstr("<skipped message=\"the model takes no images"));
  EXPECT_THAT(junit, HasSubstr("<testcase classname=\"k3.verify\" name=\"health\""));
  EXPECT_THAT(junit, HasSubstr("<failure message=\"GET /health: HTTP 503\">"));
  const std::string table = FormatVerifyReport(report, ReportFormat::kTable);
  EXPECT_THAT(table, HasSubstr("FAIL  health"));
  EXPECT_THAT(table, HasSubstr("9 passed, 1 failed, 1 skipped"));
  EXPECT_FALSE(ParseReportFormat("xml").ok());
}

// Whether every byte sequence of `text` is UTF-8 (what an XML parser requires of the junit report).
bool ValidUtf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// Snippets of a model's answer are cut on character boundaries, and bytes that are not UTF-8 reach the
// junit XML as U+FFFD (seen in tests/e2e: a snippet of tiny-k3's output cut inside a character).
TEST(VerifyReportTest, SnippetsAndJunitStayUtf8) {
  const std::string text = "ab\xC3\xA9\xE4\xB8\xAD";  // "abé中"
  for (size_t max = 0; max <= text.size(); ++max) EXPECT_TRUE(ValidUtf8(Snippet(text, max))) << max;
  EXPECT_EQ(Snippet(text, 3), "ab...");
  EXPECT_EQ(Snippet(text, 4), "ab\xC3\xA9...");
  VerifyReport report;
  report.endpoint = "http://x";
  CheckResult check;
  check.id = "reasoning";
  check.outcome = Outcome::kFail;
  check.detail = "cut \xE4\xB8";
  check.evidence = "bad \xFF\xC0\x80 <ok> \xC3\xA9";
  report.checks.push_back(check);
  const std::string junit = FormatVerifyReport(report, ReportFormat::kJunit);
  EXPECT_TRUE(ValidUtf8(junit)) << junit;
  EXPECT_THAT(junit, HasSubstr("cut \xEF\xBF\xBD\xEF\xBF\xBD"));
  EXPECT_THAT(junit, HasSubstr("bad \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD &lt;ok&gt; \xC3\xA9"));
}

}  // namespace
}  // namespace k3::client
