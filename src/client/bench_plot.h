// A hand-written SVG chart of a k3 bench sweep: output throughput (tok/s, x) against latency (ms, y),
// one point per concurrency level for median end-to-end latency and one for median TTFT, each labelled
// with its concurrency. Self-contained (no scripts, no external fonts or styles).
#pragma once

#include <string>
#include <vector>

#include "src/client/bench_report.h"

namespace k3::client {

std::string LatencyThroughputSvg(const std::vector<BenchLevel>& levels, const std::string& title);

}  // namespace k3::client
