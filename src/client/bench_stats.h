// Per-request records of a load run and the statistics `vllm bench serve` reports from them: TTFT,
// TPOT, ITL and end-to-end latency (mean, median, std, percentiles, in ms), throughputs, peaks.
// Definitions follow vLLM's: TPOT = (latency - TTFT) / (output tokens - 1) for requests with more than
// one output token; ITL = the gaps between output-carrying chunks, pooled over requests; percentiles
// interpolate linearly between order statistics (numpy's default); std is the population std.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace k3::client {

struct RequestRecord {
  bool success = false;
  std::string error;          // why it failed (empty on success)
  double start_s = 0;         // from the start of the run
  double ttft_s = 0;          // to the first output-carrying chunk
  double latency_s = 0;       // end to end
  std::vector<double> itl_s;  // gaps between output chunks
  int64_t prompt_tokens = 0;  // usage.prompt_tokens (the server's count)
  int64_t output_tokens = 0;  // usage.completion_tokens, else the number of output chunks
  std::string generated_text;
};

// The p-th percentile (0..100) of sorted values, linear interpolation; 0 for no values.
double Percentile(const std::vector<double>& sorted, double p);

struct Distribution {
  double mean = 0, median = 0, std = 0;
  std::map<double, double> percentiles;  // p -> value
};
// values in seconds; the distribution in milliseconds.
Distribution SummarizeMs(std::vector<double> seconds, const std::vector<double>& percentiles);

struct BenchMetrics {
  int completed = 0;
  int failed = 0;
  int64_t total_input = 0;
  int64_t total_output = 0;
  double duration_s = 0;
  double request_throughput = 0;       // completed / duration
  double output_throughput = 0;        // output tokens / duration
  double total_token_throughput = 0;   // (input + output tokens) / duration
  double max_output_tokens_per_s = 0;  // the busiest whole second
  int max_concurrent_requests = 0;
  Distribution ttft, tpot, itl, e2el;
};

inline const std::vector<double> kDefaultPercentiles = {50, 90, 99};

BenchMetrics ComputeMetrics(const std::vector<RequestRecord>& records, double duration_s,
                            const std::vector<double>& percentiles = kDefaultPercentiles);

}  // namespace k3::client
