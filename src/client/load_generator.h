// The load generator of k3 bench: streams chat completions with libcurl's multi interface from one
// thread (no thread per request), at most `concurrency` in flight, optionally paced by a Poisson
// arrival process of `request_rate` requests/s, and records per request what bench_stats.h needs.
// Connections are kept alive and reused across requests.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "src/client/bench_stats.h"
#include "src/client/endpoint.h"
#include "src/client/http.h"

namespace k3::client {

struct LoadOptions {
  Endpoint endpoint;
  std::string path = "/v1/chat/completions";
  int concurrency = 1;
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s; inf: all at once
  double duration_s = 0;  // > 0: send (cycling through the bodies) until this much time has passed
  uint64_t seed = 0;      // of the arrival process
  HttpOptions http;
  // Seconds on a monotonic clock (the seam tests may replace).
  std::function<double()> clock;
  // Called after each finished request with (finished, failed).
  std::function<void(int, int)> on_progress;
};

struct LoadResult {
  std::vector<RequestRecord> records;  // in completion order
  double duration_s = 0;
};

// bodies: complete JSON request bodies with "stream": true and stream_options.include_usage.
LoadResult RunLoad(const std::vector<std::string>& bodies, const LoadOptions& options);

}  // namespace k3::client
