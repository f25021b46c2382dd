// Prometheus text exposition format (what /metrics serves) parsed into samples, and the counters
// k3 verify and k3 bench read from it: prefix-cache hits and token totals under vLLM's names
// (vllm:prefix_cache_hits_total, vllm:prompt_tokens_total, vllm:generation_tokens_total) or any name
// with the same ending, so other servers that follow vLLM's naming work too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3::client {

struct MetricSample {
  std::string name;    // "vllm:prompt_tokens_total"
  std::string labels;  // the text between the braces, as written
  double value = 0;
};

// Skips comments, blank lines and lines it cannot read.
std::vector<MetricSample> ParseMetricsText(std::string_view text);

// The sum over every sample whose name ends with suffix (all label sets, all prefixes such as
// "vllm:" or "vllm:gpu_"); nullopt when no sample matches.
std::optional<double> SumBySuffix(const std::vector<MetricSample>& samples, std::string_view suffix);

// The name of the first sample that ends with suffix, or empty.
std::string FirstNameWithSuffix(const std::vector<MetricSample>& samples, std::string_view suffix);

}  // namespace k3::client
