// ServingMetrics: what GET /metrics reports, with vLLM's metric names. Latency histograms are measured
// here (server side, from the moment a request's header was read); gauges and token counters come from
// Engine::Metrics() at scrape time.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/engine/engine.h"
#include "src/server/metrics.h"

namespace k3::server {

class ServingMetrics {
 public:
  ServingMetrics();
  void ObserveTimeToFirstToken(double seconds) { ttft_.Observe(seconds); }
  void ObserveInterTokenLatency(double seconds) { itl_.Observe(seconds); }
  void ObserveEndToEnd(double seconds) { e2e_.Observe(seconds); }
  void CountFinished(engine::FinishReason reason);

  // The Prometheus text of every metric; `engine` null while the model loads (gauges then read 0).
  std::string Render(const engine::EngineMetrics* engine, std::string_view model_name) const;

 private:
  Histogram ttft_;
  Histogram itl_;
  Histogram e2e_;
  std::array<std::atomic<int64_t>, 5> finished_{};  // by FinishReason
};

}  // namespace k3::server
