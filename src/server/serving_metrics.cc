// ServingMetrics: vLLM-named gauges, counters and latency histograms in Prometheus text.
#include "src/server/serving_metrics.h"

#include <fmt/format.h>

namespace k3::server {

// Bucket bounds as vLLM uses them for the same histograms.
ServingMetrics::ServingMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
             1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      itl_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
            40.0, 80.0}),
      e2e_({0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
            30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}) {}

void ServingMetrics::CountFinished(engine::FinishReason reason) {
  const size_t i = static_cast<size_t>(reason);
  if (i < finished_.size()) finished_[i].fetch_add(1, std::memory_order_relaxed);
}

std::string ServingMetrics::Render(const engine::EngineMetrics* engine, std::string_view model_name) const {
  const engine::EngineMetrics m = engine ? *engine : engine::EngineMetrics{};
  const std::string labels = fmt::format("model_name=\"{}\"", EscapeLabelValue(model_name));
  PrometheusText t;
  t.Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", labels,
          static_cast<double>(m.num_running));
  t.Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels,
          static_cast<double>(m.num_waiting));
  t.Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels, m.kv_cache_usage);
  t.Counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
            labels, static_cast<double>(m.prefix_cache_queries));
  t.Counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", labels,
            static_cast<double>(m.prefix_cache_hits));
  t.Counter("vllm:num_preemptions", "Cumulative number of preemptions from the engine.", labels,
            static_cast<double>(m.preemptions_total));
  t.Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", labels,
            static_cast<double>(m.prompt_tokens_total));
  t.Counter("vllm:generation_tokens", "Number of generation tokens processed.", labels,
            static_cast<double>(m.generation_tokens_total));
  // One sample per finish reason under one metric family.
  std::string success =
      "# HELP vllm:request_success Count of successfully processed requests.\n"
      "# TYPE vllm:request_success counter\n";
  for (auto reason : {engine::FinishReason::kStop, engine::FinishReason::kLength,
                      engine::FinishReason::kAbort, engine::FinishReason::kError}) {
    success += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels,
                           engine::FinishReasonName(reason),
                           finished_[static_cast<size_t>(reason)].load(std::memory_order_relaxed));
  }
  t.Histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", labels,
              ttft_.Read());
  t.Histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", labels,
              itl_.Read());
  t.Histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", labels,
              e2e_.Read());
  return t.text() + success;
}

}  // namespace k3::server
