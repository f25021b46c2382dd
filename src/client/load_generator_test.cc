// The load generator against FakeOpenAi over loopback: token totals equal the server's counters,
// TTFT/ITL reflect the server's pacing, concurrency and request rate are respected, failures of every
// kind are recorded with their reason; RunBench end to end with /metrics deltas.
#include "src/client/load_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/client/bench.h"
#include "src/client/testing/fake_openai.h"
#include "src/client/workload.h"

namespace k3::client {
namespace {

using testing::FakeOpenAi;
using testing::FakeOpenAiOptions;
using ::testing::HasSubstr;

std::vector<std::string> Bodies(int n, int input_len = 12, int output_len = 1000) {
  WorkloadOptions w;
  w.model = "fake-k3";
  w.num_prompts = n;
  w.input_len = input_len;
  w.output_len = output_len;
  return *BuildWorkload(w);
}

LoadOptions Options(const FakeOpenAi& server, int concurrency) {
  LoadOptions o;
  o.endpoint = *ParseEndpoint(server.url(), "");
  o.concurrency = concurrency;
  o.http.timeout_s = 10;
  return o;
}

TEST(LoadGeneratorTest, TokenTotalsMatchTheServer) {
  FakeOpenAi server({.output_tokens = 5});
  int progress_calls = 0;
  LoadOptions options = Options(server, 4);
  options.on_progress = [&](int done, int failed) {
    ++progress_calls;
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(done, progress_calls);
  };
  const LoadResult result = RunLoad(Bodies(40), options);
  ASSERT_EQ(result.records.size(), 40u);
  const BenchMetrics m = ComputeMetrics(result.records, result.duration_s);
  EXPECT_EQ(m.completed, 40) << result.records[0].error;
  EXPECT_EQ(m.total_input, server.prompt_tokens_total());
  EXPECT_EQ(m.total_output, server.generation_tokens_total());
  EXPECT_EQ(m.total_input, 40 * 12);
  EXPECT_EQ(m.total_output, 40 * 5);
  EXPECT_LE(m.max_concurrent_requests, 4);
  EXPECT_EQ(progress_calls, 40);
  // Reasoning chunk + 5 content chunks: 5 gaps per request.
  for (const RequestRecord& r : result.records) EXPECT_EQ(r.itl_s.size(), 5u);
  EXPECT_EQ(result.records[0].generated_text, "Thinking about it. tok0 tok1 tok2 tok3 tok4");
}

TEST(LoadGeneratorTest, TtftAndItlFollowTheServersPacing) {
  FakeOpenAi server(
      {.reasoning_field = "", .output_tokens = 4, .first_token_delay_s = 0.08, .token_interval_s = 0.03});
  const LoadResult result = RunLoad(Bodies(4), Options(server, 2));
  const BenchMetrics m = ComputeMetrics(result.records, result.duration_s);
  ASSERT_EQ(m.completed, 4);
  // Lower bounds only (sleeps on a loaded machine only get longer): the first output chunk leaves the
  // server 80 ms after the request arrived, so TTFT >= 80 ms; it is stamped at the first chunk, not at
  // the end; three 30 ms gaps follow it.
  for (const RequestRecord& r : result.records) {
    EXPECT_GE(r.ttft_s, 0.08);
    EXPECT_LT(r.ttft_s, r.latency_s);
    ASSERT_EQ(r.itl_s.size(), 3u);
  }
  EXPECT_GE(m.itl.mean, 20);
  EXPECT_GE(m.tpot.mean, 20);
  // Two at a time, each about 170 ms: the four take about two rounds.
  EXPECT_GE(result.duration_s, 2 * 0.17);
  EXPECT_EQ(m.max_concurrent_requests, 2);
}

TEST(LoadGeneratorTest, RequestRatePacesArrivals) {
  FakeOpenAi server({.output_tokens = 1});
  LoadOptions options = Options(server, 8);
  options.request_rate = 50;  // 20 requests: about 0.4 s of arrivals
  const LoadResult result = RunLoad(Bodies(20), options);
  ASSERT_EQ(result.records.size(), 20u);
  double last_start = 0;
  for (const RequestRecord& r : result.records) last_start = std::max(last_start, r.start_s);
  EXPECT_GT(last_start, 0.15);
  EXPECT_LT(last_start, 2.0);
}

TEST(LoadGeneratorTest, DurationCyclesThroughTheBodies) {
  FakeOpenAi server({.output_tokens = 2, .first_token_delay_s = 0.01});
  LoadOptions options = Options(server, 2);
  options.duration_s = 0.3;
  const LoadResult result = RunLoad(Bodies(3), options);
  EXPECT_GT(result.records.size(), 3u);
  EXPECT_GE(result.duration_s, 0.3);
  for (const RequestRecord& r : result.records) EXPECT_TRUE(r.success) << r.error;
}

TEST(LoadGeneratorTest, FailuresAreRecordedWithTheirReason) {
  {
    FakeOpenAi server({.sse_done = false});
    const LoadResult r = RunLoad(Bodies(2), Options(server, 1));
    ASSERT_EQ(r.records.size(), 2u);
    EXPECT_FALSE(r.records[0].success);
    EXPECT_THAT(r.records[0].error, HasSubstr("SSE: the stream ended without 'data: [DONE]'"));
  }
  {
    FakeOpenAi server({.model = "other"});  // the bodies name fake-k3: 404 with an OpenAI error
    const LoadResult r = RunLoad(Bodies(2), Options(server, 2));
    EXPECT_THAT(r.records[0].error, HasSubstr("HTTP 404: model 'fake-k3' does not exist"));
    EXPECT_EQ(ComputeMetrics(r.records, r.duration_s).failed, 2);
  }
  std::string url;
  {
    FakeOpenAi gone({});
    url = gone.url();
  }
  LoadOptions options;
  options.endpoint = *ParseEndpoint(url, "");
  const LoadResult r = RunLoad(Bodies(3), options);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_THAT(r.records[2].error, HasSubstr("connection refused"));
}

TEST(LoadGeneratorTest, ClockSeamStampsEveryTime) {
  FakeOpenAi server({.reasoning_field = "", .output_tokens = 3});
  // A clock that moves 1 s per reading: every time the generator records comes from this clock.
  double fake_now = 1000;
  LoadOptions options = Options(server, 1);
  options.clock = [&fake_now] { return fake_now += 1; };
  const LoadResult result = RunLoad(Bodies(1), options);
  ASSERT_EQ(result.records.size(), 1u);
  const RequestRecord& r = result.records[0];
  ASSERT_TRUE(r.success) << r.error;
  // Whole seconds only, in order. How many readings fall between two tokens depends on how the socket
  // delivers the chunks (one read per token, or other work in between), so a gap is >= 1 s, not == 1 s.
  EXPECT_EQ(r.ttft_s, std::floor(r.ttft_s));
  EXPECT_GE(r.ttft_s, 1);
  for (double gap : r.itl_s) {
    EXPECT_EQ(gap, std::floor(gap));
    EXPECT_GE(gap, 1);
  }
  EXPECT_GT(r.latency_s, r.ttft_s);
  EXPECT_EQ(result.duration_s, std::floor(result.duration_s));
}

TEST(RunBenchTest, SweepWithServerCounters) {
  FakeOpenAi server({.output_tokens = 3});
  BenchOptions options;
  options.endpoint = *ParseEndpoint(server.url(), "");
  options.concurrency = {1, 3};
  options.workload.num_prompts = 6;
  options.workload.input_len = 10;
  options.workload.output_len = 3;
  auto run = RunBench(options);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->info.model, "fake-k3");  // from /v1/models
  ASSERT_EQ(run->levels.size(), 2u);
  for (const BenchLevel& level : run->levels) {
    EXPECT_EQ(level.metrics.completed, 6);
    ASSERT_TRUE(level.server_prompt_tokens.has_value());
    EXPECT_EQ(*level.server_prompt_tokens, static_cast<double>(level.metrics.total_input));
    EXPECT_EQ(*level.server_generation_tokens, static_cast<double>(level.metrics.total_output));
    EXPECT_EQ(level.metrics.total_output, 18);
  }
  EXPECT_EQ(run->levels[1].concurrency, 3);

  options.endpoint = *ParseEndpoint("http://127.0.0.1:1", "");
  EXPECT_THAT(RunBench(options).status().message(), HasSubstr("connection refused"));
}

// --images against a server that reads them: every request's prompt carries K3's image prompt (the fake
// counts 3 + N + 2 per image), and the report names the images; against a model without a tower every
// request is a counted failure whose error names the missing tower.
TEST(RunBenchTest, ImagesPerRequest) {
  FakeOpenAi server({.output_tokens = 2});
  BenchOptions options;
  options.endpoint = *ParseEndpoint(server.url(), "");
  options.concurrency = {2};
  options.workload.num_prompts = 4;
  options.workload.input_len = 5;
  options.workload.output_len = 2;
  options.workload.images = 2;
  options.workload.image_width = 100;  // padded to 112 x 56: 4 x 2 merged patches, 8 image tokens
  options.workload.image_height = 50;
  auto run = RunBench(options);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->info.image_tokens, 3 + 8);
  const BenchLevel& level = run->levels.at(0);
  EXPECT_EQ(level.metrics.completed, 4);
  EXPECT_EQ(level.metrics.total_input, 4 * (5 + 2 * (3 + 8 + 2)));
  const std::string summary = FormatBenchSummary(level, run->info);
  EXPECT_THAT(summary, HasSubstr("2 x 100x50 jpeg (random pixels)"));
  EXPECT_THAT(summary, HasSubstr("3 + 8 + 'image 100x50'"));
  const nlohmann::json json = VllmResultJson(level, run->info);
  EXPECT_EQ(json["images_per_request"], 2);
  EXPECT_EQ(json["image_format"], "jpeg");
  EXPECT_EQ(json["image_tokens_per_image"], 11);

  FakeOpenAi text_only({.vision = false});
  options.endpoint = *ParseEndpoint(text_only.url(), "");
  auto refused = RunBench(options);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->levels.at(0).metrics.failed, 4);
  EXPECT_EQ(refused->levels.at(0).metrics.completed, 0);
  EXPECT_THAT(refused->levels.at(0).records.at(0).error, HasSubstr("no vision tower"));
}

}  // namespace
}  // namespace k3::client
