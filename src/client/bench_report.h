// The results of k3 bench: one JSON object per concurrency level with the field names
// `vllm bench serve` writes (duration, completed, failed, total_input_tokens, total_output_tokens,
// request_throughput, output_throughput, total_token_throughput, mean_ttft_ms, median_ttft_ms,
// std_ttft_ms, p99_ttft_ms, ... for ttft/tpot/itl/e2el, input_lens, output_lens, ttfts, itls,
// start_times, generated_texts, errors, max_output_tokens_per_s, max_concurrent_requests, plus date,
// model_id, num_prompts, request_rate, burstiness, max_concurrency), and the terminal summary.
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
};

nlohmann::json VllmResultJson(const BenchLevel& level, const BenchRunInfo& info);

// The "Serving Benchmark Result" block for a terminal, one per level.
std::string FormatBenchSummary(const BenchLevel& level);

}  // namespace k3::client
