// Histograms and the Prometheus text writer.
#include "src/server/metrics.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace k3::server {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

std::string Braced(std::string_view labels, std::string_view extra = {}) {
  if (labels.empty() && extra.empty()) return {};
  if (labels.empty()) return fmt::format("{{{}}}", extra);
  if (extra.empty()) return fmt::format("{{{}}}", labels);
  return fmt::format("{{{},{}}}", labels, extra);
}

}  // namespace

void PrometheusText::Gauge(std::string_view name, std::string_view help, std::string_view labels,
                           double value) {
  fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} gauge\n{}{} {}\n", name, help, name,
                 name, Braced(labels), Number(value));
}

void PrometheusText::Counter(std::string_view name, std::string_view help, std::string_view labels,
                             double value) {
  fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} counter\n{}_total{} {}\n", name, help,
                 name, name, Braced(labels), Number(value));
}

void PrometheusText::Histogram(std::string_view name, std::string_view help, std::string_view labels,
                               const Histogram::Snapshot& s) {
  fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (size_t i = 0; i < s.cumulative.size(); ++i) {
    const double bound = i < s.upper_bounds.size() ? s.upper_bounds[i] : INFINITY;
    fmt::format_to(std::back_inserter(text_), "{}_bucket{} {}\n", name,
                   Braced(labels, fmt::format("le=\"{}\"", Number(bound))), s.cumulative[i]);
  }
  fmt::format_to(std::back_inserter(text_), "{}_sum{} {}\n{}_count{} {}\n", name, Braced(labels),
                 Number(s.sum), name, Braced(labels), s.count);
}

}  // namespace k3::server
