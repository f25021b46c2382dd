// k3 verify --suite vendor against FakeVendor over loopback: every check passes against a server that
// counts and answers as k3 does, and a deliberately broken server (a token id leaked into finish_reason,
// prompts miscounted, tool arguments that break their schema, ...) fails exactly the checks it breaks,
// each naming what it found.
#include "src/client/vendor_verify.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/client/testing/fake_vendor.h"
#include "src/client/vendor_corpus.h"
#include "src/client/verify_report.h"
#include "src/tokenizer/token_report.h"

namespace k3::client {
namespace {

using testing::FakeVendor;
using testing::FakeVendorOptions;
using ::testing::HasSubstr;

const tokenizer::Tokenizer& TestTokenizer() {
  static const tokenizer::Tokenizer tokenizer = *tokenizer::LoadOrTrainTokenizer("", 256);
  return tokenizer;
}

std::vector<std::string> Ids() {
  std::vector<std::string> ids = {"models"};
  for (const ToolSchemaCase& c : ToolSchemaCorpus()) ids.push_back("tool-args-" + c.name);
  for (const char* id : {"tool-choice-required", "tool-choice-named", "tool-choice-none", "dynamic-tools",
                         "response-format", "thinking-effort", "prompt-tokens-text", "prompt-tokens-image",
                         "special-token-text", "usage-chunk", "finish-reason"}) {
    ids.push_back(id);
  }
  return ids;
}

FakeVendorOptions Options() {
  FakeVendorOptions options;
  options.tokenizer = &TestTokenizer();
  return options;
}

VerifyReport VendorAgainst(const FakeVendor& server, bool with_tokenizer = true) {
  VendorOptions options;
  options.verify.endpoint = *ParseEndpoint(server.url() + "/v1", "");
  options.verify.http.timeout_s = 10;
  if (with_tokenizer) options.tokenizer = &TestTokenizer();
  return RunVendorVerify(options);
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

// The checks in `failing` fail (each detail containing its text); every other check passes.
void ExpectFailing(const VerifyReport& report, const std::map<std::string, std::string>& failing) {
  std::vector<std::string> ran;
  for (const CheckResult& c : report.checks) ran.push_back(c.id);
  ASSERT_EQ(ran, Ids()) << Dump(report);
  for (const CheckResult& c : report.checks) {
    auto it = failing.find(c.id);
    EXPECT_EQ(c.outcome, it == failing.end() ? Outcome::kPass : Outcome::kFail) << c.id << "\n"
                                                                                << Dump(report);
    if (it != failing.end()) {
      EXPECT_THAT(c.detail, HasSubstr(it->second)) << c.id;
    }
  }
  EXPECT_EQ(report.failures(), static_cast<int>(failing.size())) << Dump(report);
}

TEST(VendorVerifyTest, EverythingPassesAgainstAServerThatCountsAsK3Does) {
  FakeVendor server(Options());
  const VerifyReport report = VendorAgainst(server);
  ExpectFailing(report, {});
  EXPECT_THAT(Check(report, "prompt-tokens-text").detail, HasSubstr("against k3's tokenizer and renderer"));
  EXPECT_THAT(Check(report, "tool-args-create_event").detail, HasSubstr("streamed (6 chunks reassembled)"));
  EXPECT_THAT(Check(report, "usage-chunk").detail, HasSubstr("last before [DONE]"));
  EXPECT_THAT(Check(report, "finish-reason").detail, HasSubstr("tool_calls x"));
}

// The acceptance case: one broken server, three named faults, each reported where it belongs.
TEST(VendorVerifyTest, BrokenEndpointFailsWithNamedFaults) {
  FakeVendorOptions options = Options();
  options.finish_reason_leak = "stop_163586";
  options.prompt_token_error = 1;
  options.valid_tool_arguments = false;
  FakeVendor server(options);
  const VerifyReport report = VendorAgainst(server);
  std::map<std::string, std::string> failing;
  for (const ToolSchemaCase& c : ToolSchemaCorpus()) failing["tool-args-" + c.name] = "breaks the schema";
  failing["tool-choice-required"] = "breaks the schema";
  failing["tool-choice-named"] = "breaks the schema";
  failing["dynamic-tools"] = "MISMATCH";
  failing["thinking-effort"] = "MISMATCH";
  failing["prompt-tokens-text"] = "differs from the reference count";
  failing["prompt-tokens-image"] = "MISMATCH";
  failing["special-token-text"] = "differs from the reference count";
  failing["finish-reason"] = "finish_reason 'stop_163586' is a raw token id";
  ExpectFailing(report, failing);
  EXPECT_THAT(Check(report, "tool-args-get_weather").detail, HasSubstr("get_weather({\"unexpected\": 1})"));
  EXPECT_THAT(Check(report, "finish-reason").detail, HasSubstr("tool-choice-none"));

  const auto json = nlohmann::json::parse(FormatVerifyReport(report, ReportFormat::kJson));
  EXPECT_EQ(json["failed"], static_cast<int>(failing.size()));
  const std::string junit = FormatVerifyReport(report, ReportFormat::kJunit);
  EXPECT_THAT(junit, HasSubstr("<testcase classname=\"k3.verify\" name=\"finish-reason\""));
  EXPECT_THAT(junit, HasSubstr("is a raw token id"));
}

TEST(VendorVerifyTest, EachFaultAlone) {
  {
    FakeVendorOptions options = Options();
    options.finish_reason_leak = "stop_163586";
    FakeVendor server(options);
    ExpectFailing(VendorAgainst(server), {{"finish-reason", "raw token id"}});
  }
  {
    FakeVendorOptions options = Options();
    options.finish_reason_leak = "eos";
    FakeVendor server(options);
    ExpectFailing(VendorAgainst(server), {{"finish-reason", "'eos' is not one of stop, length, tool_calls"}});
  }
  {
    FakeVendorOptions options = Options();
    options.valid_tool_arguments = false;
    FakeVendor server(options);
    const VerifyReport report = VendorAgainst(server);
    EXPECT_EQ(Check(report, "tool-args-set_thermostat").outcome, Outcome::kFail) << Dump(report);
    EXPECT_THAT(Check(report, "tool-args-set_thermostat").detail, HasSubstr("non-streamed: tool_calls[0]"));
    EXPECT_EQ(Check(report, "prompt-tokens-text").outcome, Outcome::kPass);
  }
  {
    FakeVendorOptions options = Options();
    options.usage_before_finish = true;
    FakeVendor server(options);
    ExpectFailing(VendorAgainst(server), {{"usage-chunk", "comes before the finish_reason"}});
  }
  {
    FakeVendorOptions options = Options();
    options.specials_as_ids = true;
    FakeVendor server(options);
    ExpectFailing(VendorAgainst(server), {{"special-token-text", "tokenized as special ids"}});
  }
}

// Thinking effort judged by the render route's ids: an endpoint that drops it renders one prompt.
TEST(VendorVerifyTest, IgnoredEffortSeenThroughTheRenderRoute) {
  FakeVendorOptions options = Options();
  options.render_route = true;
  FakeVendor good(options);
  const VerifyReport report = VendorAgainst(good);
  ExpectFailing(report, {});
  EXPECT_THAT(Check(report, "thinking-effort").detail, HasSubstr("by the render route"));

  options.ignore_effort = true;
  FakeVendor ignoring(options);
  ExpectFailing(VendorAgainst(ignoring), {{"thinking-effort", "the effort is ignored"}});
}

// Without --tokenizer: counts come from the render route when there is one, else those checks skip.
TEST(VendorVerifyTest, WithoutTokenizer) {
  FakeVendor no_render(Options());
  const VerifyReport skipped = VendorAgainst(no_render, /*with_tokenizer=*/false);
  EXPECT_EQ(skipped.failures(), 0) << Dump(skipped);
  for (const char* id :
       {"thinking-effort", "prompt-tokens-text", "prompt-tokens-image", "special-token-text"}) {
    EXPECT_EQ(Check(skipped, id).outcome, Outcome::kSkip) << id;
  }
  EXPECT_THAT(Check(skipped, "prompt-tokens-text").detail, HasSubstr("--tokenizer DIR"));

  FakeVendorOptions options = Options();
  options.render_route = true;
  options.prompt_token_error = 2;
  FakeVendor miscounting(options);
  const VerifyReport report = VendorAgainst(miscounting, /*with_tokenizer=*/false);
  EXPECT_EQ(Check(report, "prompt-tokens-text").outcome, Outcome::kFail) << Dump(report);
  EXPECT_THAT(Check(report, "prompt-tokens-text").detail, HasSubstr("the endpoint's render route"));
  EXPECT_EQ(Check(report, "special-token-text").outcome, Outcome::kSkip);
}

TEST(VendorVerifyTest, ModelWithoutImagesSkipsTheImageCount) {
  FakeVendorOptions options = Options();
  options.vision = false;
  FakeVendor server(options);
  const VerifyReport report = VendorAgainst(server);
  EXPECT_EQ(report.failures(), 0) << Dump(report);
  EXPECT_EQ(Check(report, "prompt-tokens-image").outcome, Outcome::kSkip);
  EXPECT_THAT(Check(report, "prompt-tokens-image").detail, HasSubstr("no vision tower"));
}

TEST(VendorVerifyTest, UnreachableEndpoint) {
  std::string url;
  {
    FakeVendor gone(Options());
    url = gone.url();
  }
  VendorOptions options;
  options.verify.endpoint = *ParseEndpoint(url, "");
  const VerifyReport report = RunVendorVerify(options);
  EXPECT_EQ(report.failures(), static_cast<int>(Ids().size())) << Dump(report);
  EXPECT_THAT(Check(report, "finish-reason").detail, HasSubstr("the endpoint is unreachable"));
}

}  // namespace
}  // namespace k3::client
