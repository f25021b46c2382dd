// LatencyThroughputSvg: linear axes with rounded ticks, two polylines with markers, and a legend in the
// band between the title and the plot area (inside the plot it could cover a point: seen in the headless
// Chromium screenshot test, tests/e2e).
#include "src/client/bench_plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace k3::client {
namespace {

constexpr double kWidth = 720, kHeight = 440;
constexpr double kLeft = 80, kRight = 30, kTop = 66, kBottom = 60;

// A "nice" tick step (1, 2 or 5 times a power of ten) for about five ticks up to max.
double TickStep(double max) {
  if (max <= 0) return 1;
  const double raw = max / 5;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string LatencyThroughputSvg(const std::vector<BenchLevel>& levels, const std::string& title) {
  double max_x = 0, max_y = 0;
  for (const BenchLevel& l : levels) {
    max_x = std::max(max_x, l.metrics.output_throughput);
    max_y = std::max({max_y, l.metrics.e2el.median, l.metrics.ttft.median});
  }
  const double step_x = TickStep(max_x), step_y = TickStep(max_y);
  const double top_x = std::max(step_x, std::ceil(max_x / step_x) * step_x);
  const double top_y = std::max(step_y, std::ceil(max_y / step_y) * step_y);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + x / top_x * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - y / top_y * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{3}</text>\n",
      kWidth, kHeight, kWidth / 2, Escape(title));
  // Grid and ticks.
  for (double x = 0; x <= top_x + step_x / 2; x += step_x) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e0e0e0\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
        px(x), kTop, kTop + plot_h, kTop + plot_h + 18, x);
  }
  for (double y = 0; y <= top_y + step_y / 2; y += step_y) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e0e0e0\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, py(y), kLeft + plot_w, kLeft - 6, py(y) + 4, y);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">output throughput (tokens/s)</text>\n"
      "<text transform=\"translate(20 {}) rotate(-90)\" text-anchor=\"middle\">latency (ms)</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 15, kTop + plot_h / 2);
  struct Series {
    const char* name;
    const char* color;
    double (*value)(const BenchLevel&);
  };
  const Series series[] = {
      {"median end-to-end latency", "#1f77b4", [](const BenchLevel& l) { return l.metrics.e2el.median; }},
      {"median TTFT", "#d62728", [](const BenchLevel& l) { return l.metrics.ttft.median; }}};
  std::vector<const BenchLevel*> sorted;
  for (const BenchLevel& l : levels) sorted.push_back(&l);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->concurrency < b->concurrency; });
  // Drawing order: legend, lines, labels, then every series' markers, so nothing covers a point but
  // another point.
  std::string legend, lines, labels, markers;
  int index = 0;
  for (const Series& s : series) {
    const double lx = kLeft + 240 * index++, ly = kTop - 16;  // side by side above the plot area
    legend += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/>"
        "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
        lx, ly, lx + 24, s.color, lx + 30, ly + 4, s.name);
    std::string points;
    for (const BenchLevel* l : sorted)
      points += fmt::format("{:.1f},{:.1f} ", px(l->metrics.output_throughput), py(s.value(*l)));
    lines += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points,
                         s.color);
    markers += fmt::format("<g class=\"series\" data-name=\"{}\">\n", s.name);
    for (const BenchLevel* l : sorted) {
      const double x = px(l->metrics.output_throughput), y = py(s.value(*l));
      labels += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">c={}</text>\n", x + 6, y - 6,
                            s.color, l->concurrency);
      markers += fmt::format(
          "<circle class=\"point\" data-concurrency=\"{0}\" cx=\"{1:.1f}\" cy=\"{2:.1f}\" r=\"4\" "
          "fill=\"{3}\"><title>concurrency {0}: {4:.1f} tok/s, {5:.1f} ms</title></circle>\n",
          l->concurrency, x, y, s.color, l->metrics.output_throughput, s.value(*l));
    }
    markers += "</g>\n";
  }
  svg += legend + lines + labels + markers;
  svg += "</svg>\n";
  return svg;
}

}  // namespace k3::client
