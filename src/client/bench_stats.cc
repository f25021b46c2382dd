// Percentile, SummarizeMs and ComputeMetrics.
#include "src/client/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace k3::client {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution SummarizeMs(std::vector<double> seconds, const std::vector<double>& percentiles) {
  Distribution d;
  for (double p : percentiles) d.percentiles[p] = 0;
  if (seconds.empty()) return d;
  for (double& v : seconds) v *= 1000.0;
  std::sort(seconds.begin(), seconds.end());
  const double n = static_cast<double>(seconds.size());
  d.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / n;
  double sq = 0;
  for (double v : seconds) sq += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(sq / n);
  d.median = Percentile(seconds, 50);
  for (double p : percentiles) d.percentiles[p] = Percentile(seconds, p);
  return d;
}

BenchMetrics ComputeMetrics(const std::vector<RequestRecord>& records, double duration_s,
                            const std::vector<double>& percentiles) {
  BenchMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttfts, tpots, itls, e2els;
  std::map<int64_t, double> tokens_per_second;
  std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end)
  for (const RequestRecord& r : records) {
    edges.emplace_back(r.start_s, +1);
    edges.emplace_back(r.start_s + r.latency_s, -1);
    if (!r.success) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    m.total_input += r.prompt_tokens;
    m.total_output += r.output_tokens;
    ttfts.push_back(r.ttft_s);
    e2els.push_back(r.latency_s);
    if (r.output_tokens > 1)
      tpots.push_back((r.latency_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1));
    itls.insert(itls.end(), r.itl_s.begin(), r.itl_s.end());
    // Spread the request's tokens over its output chunks' times (first chunk at TTFT).
    const double chunks = static_cast<double>(r.itl_s.size() + 1);
    const double per_chunk = static_cast<double>(r.output_tokens) / chunks;
    double t = r.start_s + r.ttft_s;
    tokens_per_second[static_cast<int64_t>(std::floor(t))] += per_chunk;
    for (double gap : r.itl_s) {
      t += gap;
      tokens_per_second[static_cast<int64_t>(std::floor(t))] += per_chunk;
    }
  }
  if (duration_s > 0) {
    m.request_throughput = m.completed / duration_s;
    m.output_throughput = static_cast<double>(m.total_output) / duration_s;
    m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / duration_s;
  }
  for (const auto& [second, tokens] : tokens_per_second)
    m.max_output_tokens_per_s = std::max(m.max_output_tokens_per_s, tokens);
  // Ends sort before starts at the same instant: a request that ends as another starts is not concurrent.
  std::sort(edges.begin(), edges.end());
  int active = 0;
  for (const auto& [time, delta] : edges) {
    active += delta;
    m.max_concurrent_requests = std::max(m.max_concurrent_requests, active);
  }
  m.ttft = SummarizeMs(std::move(ttfts), percentiles);
  m.tpot = SummarizeMs(std::move(tpots), percentiles);
  m.itl = SummarizeMs(std::move(itls), percentiles);
  m.e2el = SummarizeMs(std::move(e2els), percentiles);
  return m;
}

}  // namespace k3::client
