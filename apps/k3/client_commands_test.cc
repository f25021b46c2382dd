// `k3 verify` and `k3 bench` as the k3 binary registers them (cmd_verify.cc, cmd_bench.cc), parsed by
// CLI11 and run against FakeOpenAi over loopback: exit codes, output formats, the files bench writes.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "apps/k3/commands.h"
#include "src/client/testing/fake_openai.h"
#include "src/client/testing/fake_vendor.h"
#include "src/tokenizer/token_report.h"

namespace k3::app {
namespace {

using client::testing::FakeOpenAi;
using ::testing::HasSubstr;

// Runs `k3 <args>` with only verify and bench registered; returns the exit code, stdout in *out.
int RunK3(std::vector<std::string> args, std::string* out) {
  CLI::App app{"k3"};
  app.require_subcommand(1);
  RegisterVerifyCommand(app);
  RegisterBenchCommand(app);
  CommandExitCode() = 0;
  std::vector<const char*> argv = {"k3"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  ::testing::internal::CaptureStdout();
  int code;
  try {
    app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
    code = CommandExitCode();
  } catch (const CLI::ParseError& e) {
    code = app.exit(e);
  }
  *out = ::testing::internal::GetCapturedStdout();
  return code;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(VerifyCommandTest, ExitCodeCountsFailures) {
  FakeOpenAi good({});
  std::string out;
  EXPECT_EQ(RunK3({"verify", "--endpoint", good.url(), "--long-context", "100", "--format", "json"}, &out), 0)
      << out;
  const auto report = nlohmann::json::parse(out);
  EXPECT_EQ(report["passed"], 11);
  EXPECT_EQ(report["model"], "fake-k3");

  FakeOpenAi broken({.health = false, .reasoning_field = ""});
  EXPECT_EQ(
      RunK3({"verify", "--endpoint", broken.url() + "/v1", "--long-context", "100", "--no-vision"}, &out), 2);
  EXPECT_THAT(out, HasSubstr("FAIL  health"));
  EXPECT_THAT(out, HasSubstr("FAIL  reasoning"));
  EXPECT_THAT(out, HasSubstr("SKIP  vision"));
  EXPECT_THAT(out, HasSubstr("8 passed, 2 failed, 1 skipped"));

  EXPECT_EQ(RunK3({"verify", "--endpoint", good.url(), "--format", "junit", "--long-context", "100"}, &out),
            0);
  EXPECT_THAT(out, HasSubstr("<testsuite name=\"k3 verify"));
}

// --suite vendor against a broken endpoint (a token id in finish_reason, prompts miscounted by one, tool
// arguments that break their schema): named failures and a non-zero exit. Without --tokenizer the counts
// come from the endpoint's render route.
TEST(VerifyCommandTest, VendorSuiteAgainstABrokenEndpoint) {
  static const tokenizer::Tokenizer tokenizer = *tokenizer::LoadOrTrainTokenizer("", 256);
  client::testing::FakeVendorOptions options;
  options.tokenizer = &tokenizer;
  options.render_route = true;
  client::testing::FakeVendor good(options);
  std::string out;
  EXPECT_EQ(RunK3({"verify", "--suite", "vendor", "--endpoint", good.url()}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("PASS  finish-reason"));

  options.finish_reason_leak = "stop_163586";
  options.prompt_token_error = 1;
  options.valid_tool_arguments = false;
  client::testing::FakeVendor broken(options);
  const int code =
      RunK3({"verify", "--suite", "vendor", "--endpoint", broken.url(), "--format", "json"}, &out);
  const auto report = nlohmann::json::parse(out);
  EXPECT_EQ(code, report["failed"].get<int>());
  EXPECT_GE(code, 3);
  std::map<std::string, std::string> detail;
  for (const auto& check : report["checks"]) {
    if (check["outcome"] == "fail") detail[check["id"]] = check["detail"];
  }
  EXPECT_THAT(detail["finish-reason"], HasSubstr("'stop_163586' is a raw token id"));
  EXPECT_THAT(detail["prompt-tokens-text"], HasSubstr("MISMATCH"));
  EXPECT_THAT(detail["tool-args-get_weather"], HasSubstr("breaks the schema"));
}

TEST(VerifyCommandTest, UsageErrors) {
  std::string out;
  EXPECT_EQ(RunK3({"verify", "--endpoint", "http://127.0.0.1:1", "--format", "xml"}, &out), 2);
  EXPECT_EQ(RunK3({"verify", "--endpoint", "localhost:8000"}, &out), 2);
  EXPECT_NE(RunK3({"verify"}, &out), 0);  // --endpoint is required
  EXPECT_EQ(RunK3({"verify", "--endpoint", "http://127.0.0.1:1", "--suite", "vendors"}, &out), 2);
  EXPECT_EQ(RunK3({"verify", "--endpoint", "http://127.0.0.1:1", "--tokenizer", "/tmp"}, &out), 2);
  EXPECT_EQ(RunK3({"verify", "--endpoint", "http://127.0.0.1:1", "--suite", "vendor", "--tokenizer",
                   "/nonexistent"},
                  &out),
            2);
  EXPECT_EQ(
      RunK3({"verify", "--endpoint", "http://127.0.0.1:1", "--image-processor", "/nonexistent.json"}, &out),
      2);
}

TEST(BenchCommandTest, WritesVllmJsonAndSvg) {
  FakeOpenAi server({.output_tokens = 3});
  const std::string json_path = ::testing::TempDir() + "/k3_bench_results.json";
  const std::string svg_path = ::testing::TempDir() + "/k3_bench_results.svg";
  std::string out;
  ASSERT_EQ(RunK3({"bench", "--endpoint", server.url(), "--concurrency", "1,2", "--num-prompts", "4",
                   "--input-len", "8", "--output-len", "3", "--out", json_path, "--plot", svg_path},
                  &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("Serving Benchmark Result"));
  std::istringstream lines(ReadFile(json_path));
  std::string line;
  int levels = 0;
  while (std::getline(lines, line)) {
    const auto level = nlohmann::json::parse(line);
    EXPECT_EQ(level["max_concurrency"], ++levels);
    EXPECT_EQ(level["completed"], 4);
    EXPECT_EQ(level["total_input_tokens"], 4 * 8);
    EXPECT_EQ(level["total_output_tokens"], 4 * 3);
    EXPECT_EQ(level["server_generation_tokens"], 12.0);
    EXPECT_TRUE(level.contains("p99_ttft_ms"));
  }
  EXPECT_EQ(levels, 2);
  const std::string svg = ReadFile(svg_path);
  EXPECT_THAT(svg, HasSubstr("data-concurrency=\"2\""));
  EXPECT_THAT(svg, HasSubstr("k3 bench: fake-k3"));
}

TEST(BenchCommandTest, FailedRequestsGiveExitCodeOne) {
  std::string url;
  {
    FakeOpenAi gone({});
    url = gone.url();
  }
  std::string out;
  EXPECT_EQ(
      RunK3({"bench", "--endpoint", url, "--model", "m", "--concurrency", "2", "--num-prompts", "3"}, &out),
      1);
  EXPECT_THAT(out, HasSubstr("Failed requests:                         3"));
  EXPECT_THAT(out, HasSubstr("connection refused"));
  EXPECT_EQ(RunK3({"bench", "--endpoint", url, "--concurrency", "2,x"}, &out), 2);
}

TEST(BenchCommandTest, ImagesFlags) {
  FakeOpenAi server({.output_tokens = 2});
  const std::string json_path = ::testing::TempDir() + "/k3_bench_images.json";
  std::string out;
  ASSERT_EQ(RunK3({"bench", "--endpoint", server.url(), "--concurrency", "1", "--num-prompts", "2",
                   "--input-len", "4", "--output-len", "2", "--images", "1", "--image-size", "100x50",
                   "--image-format", "png", "--out", json_path},
                  &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("1 x 100x50 png (random pixels)"));
  const auto level = nlohmann::json::parse(ReadFile(json_path));
  EXPECT_EQ(level["images_per_request"], 1);
  EXPECT_EQ(level["total_input_tokens"], 2 * (4 + 3 + 8 + 2));  // words + K3's image prompt in the fake
  EXPECT_EQ(RunK3({"bench", "--endpoint", server.url(), "--images", "2"}, &out), 2);  // no --image-size
  EXPECT_EQ(RunK3({"bench", "--endpoint", server.url(), "--image-size", "10x10"}, &out), 2);  // no --images
  EXPECT_EQ(RunK3({"bench", "--endpoint", server.url(), "--images", "1", "--image-size", "10x10",
                   "--image-format", "gif"},
                  &out),
            2);
}

}  // namespace
}  // namespace k3::app
