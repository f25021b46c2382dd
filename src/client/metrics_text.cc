// ParseMetricsText: one sample per line, `name{labels} value [timestamp]`.
#include "src/client/metrics_text.h"

#include <cstdlib>
#include <string>

namespace k3::client {

std::vector<MetricSample> ParseMetricsText(std::string_view text) {
  std::vector<MetricSample> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    MetricSample sample;
    size_t value_start;
    const size_t brace = line.find('{');
    const size_t space = line.find(' ');
    if (brace != std::string_view::npos && (space == std::string_view::npos || brace < space)) {
      const size_t close = line.rfind('}');
      if (close == std::string_view::npos || close < brace) continue;
      sample.name = std::string(line.substr(0, brace));
      sample.labels = std::string(line.substr(brace + 1, close - brace - 1));
      value_start = close + 1;
    } else {
      if (space == std::string_view::npos) continue;
      sample.name = std::string(line.substr(0, space));
      value_start = space;
    }
    while (value_start < line.size() && line[value_start] == ' ') ++value_start;
    const std::string value(line.substr(value_start, line.find(' ', value_start) - value_start));
    if (value.empty()) continue;
    char* parse_end = nullptr;
    sample.value = std::strtod(value.c_str(), &parse_end);
    if (parse_end == value.c_str()) continue;
    out.push_back(std::move(sample));
  }
  return out;
}

namespace {
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::optional<double> SumBySuffix(const std::vector<MetricSample>& samples, std::string_view suffix) {
  std::optional<double> sum;
  for (const MetricSample& s : samples) {
    if (EndsWith(s.name, suffix)) sum = sum.value_or(0) + s.value;
  }
  return sum;
}

std::string FirstNameWithSuffix(const std::vector<MetricSample>& samples, std::string_view suffix) {
  for (const MetricSample& s : samples) {
    if (EndsWith(s.name, suffix)) return s.name;
  }
  return "";
}

}  // namespace k3::client
