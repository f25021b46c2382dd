// Prometheus text exposition: cumulative histograms (fixed buckets, thread-safe) and a writer for
// gauges, counters and histograms with labels, as GET /metrics answers with vLLM's metric names.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace k3::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending; +Inf is implicit
  void Observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf
    double sum = 0.0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), last one +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

// Builds the text format. `labels` is the inside of the braces, e.g. `model_name="Kimi-K3"` (may be empty).
class PrometheusText {
 public:
  void Gauge(std::string_view name, std::string_view help, std::string_view labels, double value);
  // `name` without the _total suffix (the sample gets it, as prometheus_client does).
  void Counter(std::string_view name, std::string_view help, std::string_view labels, double value);
  void Histogram(std::string_view name, std::string_view help, std::string_view labels,
                 const Histogram::Snapshot& snapshot);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// A label value with \, " and newline escaped.
std::string EscapeLabelValue(std::string_view value);

}  // namespace k3::server
