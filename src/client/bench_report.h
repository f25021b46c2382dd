// The results of k3 bench: one JSON object per concurrency level with the field names
// `vllm bench serve` writes (duration, completed, failed, total_input_tokens, total_output_tokens,
// request_throughput, output_throughput, total_token_throughput, mean_ttft_ms, median_ttft_ms,
// std_ttft_ms, p99_ttft_ms, ... for ttft/tpot/itl/e2el, input_lens, output_lens, ttfts, itls,
// start_times, generated_texts, errors, max_output_tokens_per_s, max_concurrent_requests, plus date,
// model_id, num_prompts, request_rate, burstiness, max_concurrency; with --images also
// images_per_request, image_width, image_height, image_format, image_tokens_per_image), and the terminal
// summary.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/client/bench_stats.h"

namespace k3::client {

struct BenchLevel {
  int concurrency = 1;
  double request_rate = 0;  // inf for "as fast as the concurrency allows"
  int num_prompts = 0;
  std::vector<RequestRecord> records;
  BenchMetrics metrics;
  // The server's own token counters over this level (deltas of /metrics), when it has them.
  std::optional<double> server_prompt_tokens;
  std::optional<double> server_generation_tokens;
};

struct BenchRunInfo {
  std::string endpoint;
  std::string model;
  std::string date;  // "20261202-141500"
  // --images: random images per request, their size and encoding, and what K3's processor makes of one
  // (image_tokens: 3 wrapper tokens + the merged patches; the "image WxH" text adds a few more).
  int images_per_request = 0;
  int image_width = 0, image_height = 0;
  std::string image_format;  // "jpeg" | "png"
  int64_t image_tokens = 0;
};

nlohmann::json VllmResultJson(const BenchLevel& level, const BenchRunInfo& info);

// The "Serving Benchmark Result" block for a terminal, one per level (with the images' line when the
// run sent images).
std::string FormatBenchSummary(const BenchLevel& level, const BenchRunInfo& info);

}  // namespace k3::client
