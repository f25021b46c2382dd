// k3 bench: a concurrency sweep against an OpenAI-compatible endpoint. For each level it builds the
// workload, runs the load generator, computes vLLM's metrics and reads the server's token counters from
// /metrics before and after (when it has them) so the two can be compared.
#pragma once

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/client/bench_report.h"
#include "src/client/endpoint.h"
#include "src/client/http.h"
#include "src/client/workload.h"

namespace k3::client {

struct BenchOptions {
  Endpoint endpoint;
  std::vector<int> concurrency = {1, 4, 16, 64};
  WorkloadOptions workload;  // model empty: the first model /v1/models lists
  double request_rate = std::numeric_limits<double>::infinity();
  double duration_s = 0;
  HttpOptions http;
  std::FILE* progress = nullptr;  // where the progress bar goes (nullptr: none)
};

struct BenchRun {
  BenchRunInfo info;
  std::vector<BenchLevel> levels;
};

Result<BenchRun> RunBench(const BenchOptions& options);

// "1,4,16" -> {1, 4, 16}; errors name the bad item.
Result<std::vector<int>> ParseConcurrencyList(const std::string& text);

}  // namespace k3::client
