// Exact statistics on known inputs (percentiles, TPOT, ITL pooling, throughputs, peaks), the vLLM
// result keys, the SVG chart, the progress line, workloads and flag parsing.
#include "src/client/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/client/bench.h"
#include "src/client/bench_plot.h"
#include "src/client/bench_report.h"
#include "src/client/progress.h"
#include "src/client/workload.h"
#include "src/image/data_url.h"
#include "src/image/decode.h"

namespace k3::client {
namespace {

using ::testing::HasSubstr;

TEST(PercentileTest, LinearInterpolationLikeNumpy) {
  const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 5.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 9.1);
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 9.91);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 10);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
}

TEST(SummarizeTest, MillisecondsMeanMedianStd) {
  const Distribution d = SummarizeMs({1.0, 0.1, 0.5, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9}, {50, 90, 99});
  EXPECT_NEAR(d.mean, 550, 1e-9);
  EXPECT_NEAR(d.median, 550, 1e-9);
  EXPECT_NEAR(d.std, std::sqrt(82500.0), 1e-9);
  EXPECT_NEAR(d.percentiles.at(90), 910, 1e-9);
  EXPECT_NEAR(d.percentiles.at(99), 991, 1e-9);
}

RequestRecord Record(double start, double ttft, double latency, std::vector<double> itl, int64_t in,
                     int64_t out) {
  RequestRecord r;
  r.success = true;
  r.start_s = start;
  r.ttft_s = ttft;
  r.latency_s = latency;
  r.itl_s = std::move(itl);
  r.prompt_tokens = in;
  r.output_tokens = out;
  return r;
}

std::vector<RequestRecord> KnownRecords() {
  std::vector<RequestRecord> records;
  records.push_back(Record(0.0, 0.100, 0.400, {0.1, 0.1, 0.1}, 10, 4));  // tpot 0.1
  records.push_back(Record(0.5, 0.200, 0.700, {0.2, 0.3}, 20, 3));       // tpot 0.25
  records.push_back(Record(1.0, 0.300, 0.300, {}, 30, 1));               // no tpot
  RequestRecord failed;
  failed.error = "HTTP 500";
  failed.start_s = 1.1;
  failed.latency_s = 0.05;
  records.push_back(failed);
  return records;
}

TEST(ComputeMetricsTest, KnownRecords) {
  const BenchMetrics m = ComputeMetrics(KnownRecords(), 2.0);
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.total_input, 60);
  EXPECT_EQ(m.total_output, 8);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(m.output_throughput, 4.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 34.0);
  EXPECT_NEAR(m.ttft.mean, 200, 1e-9);
  EXPECT_NEAR(m.ttft.percentiles.at(99), 298, 1e-9);
  EXPECT_NEAR(m.tpot.mean, 175, 1e-9);  // (100 + 250) / 2
  EXPECT_NEAR(m.tpot.median, 175, 1e-9);
  // ITL pooled: 100, 100, 100, 200, 300 ms.
  EXPECT_NEAR(m.itl.mean, 160, 1e-9);
  EXPECT_NEAR(m.itl.median, 100, 1e-9);
  EXPECT_NEAR(m.itl.percentiles.at(90), 260, 1e-9);
  EXPECT_NEAR(m.e2el.median, 400, 1e-9);
  // Requests 0 [0, 0.4], 1 [0.5, 1.2], 2 [1.0, 1.3], 3 [1.1, 1.15]: at most 3 at once.
  EXPECT_EQ(m.max_concurrent_requests, 3);
  // Output chunks at 0.1 0.2 0.3 0.4 (request 0), 0.7 0.9 1.2 (request 1), 1.3 (request 2), one token
  // each: second 0 has 6 tokens, second 1 has 2.
  EXPECT_NEAR(m.max_output_tokens_per_s, 6.0, 1e-9);
}

TEST(ComputeMetricsTest, NothingCompleted) {
  const BenchMetrics m = ComputeMetrics({}, 0);
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.ttft.mean, 0);
  EXPECT_EQ(m.request_throughput, 0);
}

BenchLevel KnownLevel(int concurrency, double scale) {
  BenchLevel level;
  level.concurrency = concurrency;
  level.request_rate = std::numeric_limits<double>::infinity();
  level.records = KnownRecords();
  for (RequestRecord& r : level.records) r.latency_s *= scale;
  level.num_prompts = static_cast<int>(level.records.size());
  level.metrics = ComputeMetrics(level.records, 2.0 / scale);
  return level;
}

TEST(BenchReportTest, VllmFieldNames) {
  BenchLevel level = KnownLevel(4, 1);
  level.server_prompt_tokens = 60;
  const auto json = VllmResultJson(level, {"http://h:8000", "Kimi-K3", "20261202-141500"});
  for (const char* key : {"date",
                          "model_id",
                          "num_prompts",
                          "request_rate",
                          "burstiness",
                          "max_concurrency",
                          "duration",
                          "completed",
                          "failed",
                          "total_input_tokens",
                          "total_output_tokens",
                          "request_throughput",
                          "request_goodput",
                          "output_throughput",
                          "total_token_throughput",
                          "input_lens",
                          "output_lens",
                          "ttfts",
                          "itls",
                          "start_times",
                          "generated_texts",
                          "errors",
                          "max_output_tokens_per_s",
                          "max_concurrent_requests"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
    for (const char* stat : {"mean", "median", "std", "p50", "p90", "p99"}) {
      EXPECT_TRUE(json.contains(std::string(stat) + "_" + metric + "_ms")) << stat << "_" << metric;
    }
  }
  EXPECT_EQ(json["request_rate"], "inf");
  EXPECT_EQ(json["max_concurrency"], 4);
  EXPECT_EQ(json["completed"], 3);
  EXPECT_EQ(json["total_input_tokens"], 60);
  EXPECT_DOUBLE_EQ(json["mean_tpot_ms"].get<double>(), 175);
  EXPECT_EQ(json["output_lens"], nlohmann::json({4, 3, 1, 0}));
  EXPECT_EQ(json["errors"][3], "HTTP 500");
  EXPECT_EQ(json["server_prompt_tokens"], 60.0);
  const std::string summary = FormatBenchSummary(level, {});
  EXPECT_THAT(summary, ::testing::Not(HasSubstr("Images per request")));
  EXPECT_THAT(summary, HasSubstr("Successful requests:                     3"));
  EXPECT_THAT(summary, HasSubstr("Mean TPOT (ms):                          175.00"));
  EXPECT_THAT(summary, HasSubstr("P99 TTFT (ms):"));
  EXPECT_THAT(summary, HasSubstr("HTTP 500"));
}

TEST(BenchPlotTest, OnePointPerLevelPerSeries) {
  const std::vector<BenchLevel> levels = {KnownLevel(16, 3), KnownLevel(1, 1), KnownLevel(4, 2)};
  const std::string svg = LatencyThroughputSvg(levels, "k3 bench <test>");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("k3 bench &lt;test&gt;"));
  size_t points = 0;
  for (size_t at = svg.find("class=\"point\""); at != std::string::npos;
       at = svg.find("class=\"point\"", at + 1))
    ++points;
  EXPECT_EQ(points, 2 * levels.size());
  for (const char* c : {"data-concurrency=\"1\"", "data-concurrency=\"4\"", "data-concurrency=\"16\""}) {
    EXPECT_THAT(svg, HasSubstr(c));
  }
  EXPECT_THAT(svg, HasSubstr("output throughput (tokens/s)"));
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Every element that opens also closes (a cheap well-formedness check).
  for (const char* tag : {"<g ", "<circle ", "<text "}) {
    const std::string open = tag, close = "</" + std::string(tag + 1, std::strlen(tag) - 2) + ">";
    size_t opens = 0, closes = 0;
    for (size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) ++opens;
    for (size_t at = svg.find(close); at != std::string::npos; at = svg.find(close, at + 1)) ++closes;
    EXPECT_EQ(opens, closes) << tag;
  }
}

TEST(ProgressBarTest, Render) {
  EXPECT_EQ(ProgressBar::Render("c=4", 100, 50, 1, 2.0),
            "c=4  [###############---------------]  50/100  2.0 s  25.0 req/s  1 error");
  EXPECT_EQ(ProgressBar::Render("c=1", 0, 7, 0, 1.0), "c=1  7 done  1.0 s  7.0 req/s  0 errors");
}

TEST(WorkloadTest, SyntheticPromptsShareThePrefix) {
  WorkloadOptions options;
  options.model = "m";
  options.num_prompts = 3;
  options.input_len = 20;
  options.output_len = 5;
  options.prefix_share = 0.5;
  auto bodies = BuildWorkload(options);
  ASSERT_TRUE(bodies.ok());
  ASSERT_EQ(bodies->size(), 3u);
  std::vector<std::string> texts;
  for (const std::string& b : *bodies) {
    const auto json = nlohmann::json::parse(b);
    EXPECT_EQ(json["model"], "m");
    EXPECT_EQ(json["max_tokens"], 5);
    EXPECT_EQ(json["stream"], true);
    EXPECT_EQ(json["stream_options"]["include_usage"], true);
    EXPECT_FALSE(json.contains("ignore_eos"));
    texts.push_back(json["messages"][0]["content"]);
  }
  const std::string prefix = FillerWords(10, 0);
  for (const std::string& t : texts) {
    EXPECT_EQ(t.rfind(prefix + " ", 0), 0u) << t;
    EXPECT_EQ(std::count(t.begin(), t.end(), ' '), 19) << t;  // 20 words
  }
  EXPECT_NE(texts[0], texts[1]);
  options.prefix_share = 1.5;
  EXPECT_FALSE(BuildWorkload(options).ok());
}

// --images N --image-size WxH: N random JPEG data URLs ahead of the text, different per request and
// image, the same for the same seed; PNG on request.
TEST(WorkloadTest, RandomImagesPerRequest) {
  WorkloadOptions options;
  options.model = "m";
  options.num_prompts = 3;
  options.input_len = 4;
  options.images = 2;
  options.image_width = 33;
  options.image_height = 17;
  auto bodies = BuildWorkload(options);
  ASSERT_TRUE(bodies.ok()) << bodies.status().ToString();
  ASSERT_EQ(bodies->size(), 3u);
  std::set<std::string> urls;
  for (const std::string& b : *bodies) {
    const auto content = nlohmann::json::parse(b)["messages"][0]["content"];
    ASSERT_EQ(content.size(), 3u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(content[k]["type"], "image_url");
      const std::string url = content[k]["image_url"]["url"];
      auto parsed = image::ParseDataUrl(url);
      ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
      EXPECT_EQ(parsed->mime_type, "image/jpeg");
      const auto* bytes = reinterpret_cast<const uint8_t*>(parsed->bytes.data());
      auto decoded = image::DecodeImage({bytes, parsed->bytes.size()}, image::DefaultDecodeLimits());
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      EXPECT_EQ(decoded->width, 33);
      EXPECT_EQ(decoded->height, 17);
      urls.insert(url);
    }
    EXPECT_EQ(content[2]["type"], "text");
    const std::string text = content[2]["text"];
    EXPECT_EQ(std::count(text.begin(), text.end(), ' '), 3) << text;  // 4 words
  }
  EXPECT_EQ(urls.size(), 6u);  // random pixels: no two images alike
  EXPECT_EQ(*BuildWorkload(options), *bodies);
  options.image_format = image::EncodeFormat::kPng;
  const auto png = nlohmann::json::parse(BuildWorkload(options)->front());
  EXPECT_EQ(png["messages"][0]["content"][0]["image_url"]["url"].get<std::string>().rfind(
                "data:image/png;base64,", 0),
            0u);
  options.image_width = 0;
  EXPECT_THAT(BuildWorkload(options).status().message(), HasSubstr("--image-size"));
  options.image_width = 33;
  options.dataset = "x.jsonl";
  EXPECT_THAT(BuildWorkload(options).status().message(), HasSubstr("cannot be combined with --dataset"));
}

TEST(WorkloadTest, ImageSizeAndFormatFlags) {
  EXPECT_EQ(*ParseImageSize("640x480"), (std::pair<int, int>{640, 480}));
  EXPECT_EQ(*ParseImageSize("1X1"), (std::pair<int, int>{1, 1}));
  for (const char* bad : {"", "640", "x480", "640x", "0x10", "10x-1", "20000x10", "a x b", "640x480x2"}) {
    EXPECT_FALSE(ParseImageSize(bad).ok()) << bad;
  }
  EXPECT_THAT(ParseImageSize("640").status().message(), HasSubstr("--image-size '640'"));
  EXPECT_EQ(*ParseImageFormat("png"), image::EncodeFormat::kPng);
  EXPECT_EQ(*ParseImageFormat("jpeg"), image::EncodeFormat::kJpeg);
  EXPECT_FALSE(ParseImageFormat("gif").ok());
}

TEST(WorkloadTest, Dataset) {
  const std::string path = ::testing::TempDir() + "/k3_bench_dataset.jsonl";
  {
    std::ofstream out(path);
    out << R"({"prompt": "hello", "max_tokens": 7})"
        << "\n\n"
        << R"({"messages": [{"role": "user", "content": "hi"}]})"
        << "\n";
  }
  WorkloadOptions options;
  options.model = "m";
  options.dataset = path;
  options.num_prompts = 3;
  options.ignore_eos = true;
  auto bodies = BuildWorkload(options);
  ASSERT_TRUE(bodies.ok()) << bodies.status().ToString();
  ASSERT_EQ(bodies->size(), 3u);
  EXPECT_EQ(nlohmann::json::parse((*bodies)[0])["max_tokens"], 7);
  EXPECT_EQ(nlohmann::json::parse((*bodies)[1])["messages"][0]["content"], "hi");
  EXPECT_EQ(nlohmann::json::parse((*bodies)[2])["messages"][0]["content"], "hello");  // cycled
  EXPECT_EQ(nlohmann::json::parse((*bodies)[2])["ignore_eos"], true);
  {
    std::ofstream out(path);
    out << R"({"prompt": "ok"})"
        << "\n"
        << R"({"text": 1})"
        << "\n";
  }
  EXPECT_THAT(BuildWorkload(options).status().message(), HasSubstr(":2: expected a \"prompt\""));
}

TEST(ConcurrencyListTest, Parse) {
  EXPECT_EQ(*ParseConcurrencyList("1,4,16,64"), (std::vector<int>{1, 4, 16, 64}));
  EXPECT_EQ(*ParseConcurrencyList("8"), (std::vector<int>{8}));
  EXPECT_FALSE(ParseConcurrencyList("1,,4").ok());
  EXPECT_FALSE(ParseConcurrencyList("0").ok());
  EXPECT_THAT(ParseConcurrencyList("4,x").status().message(), HasSubstr("'x'"));
}

}  // namespace
}  // namespace k3::client
