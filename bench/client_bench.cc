// client_bench: requests/s of the k3 bench load generator (src/client/load_generator) against a
// trivial loopback endpoint that answers every request with the same short, well-formed chat stream
// (role chunk, two content chunks, finish, usage, [DONE]). The target is >= 5,000 requests/s on 2
// cores, so the generator is never the bottleneck of a real benchmark.
//
// Server and generator share the machine, so two figures are printed per concurrency level: wall-clock
// requests/s (both sides together) and requests per CPU-second of the generator's own thread (its
// capacity if it had a core to itself).
//
//   build/bench/client_bench [requests per level, default 20000]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/client/bench_stats.h"
#include "src/client/load_generator.h"
#include "src/client/testing/loopback_server.h"

namespace {

using k3::client::testing::HttpResponseText;
using k3::client::testing::LoopbackServer;
using k3::client::testing::TestConnection;
using k3::client::testing::TestRequest;

double ThreadCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

std::string CannedStream() {
  const std::string head =
      R"({"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[)";
  std::string body;
  body += "data: " + head +
          R"({"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})" + "\n\n";
  body += "data: " + head + R"({"index":0,"delta":{"content":" hello"},"finish_reason":null}]})" + "\n\n";
  body += "data: " + head + R"({"index":0,"delta":{"content":" world"},"finish_reason":null}]})" + "\n\n";
  body += "data: " + head + R"({"index":0,"delta":{},"finish_reason":"length"}]})" + "\n\n";
  body +=
      "data: " + head + R"(],"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10}})" + "\n\n";
  body += "data: [DONE]\n\n";
  return HttpResponseText(200, "text/event-stream", body);
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 20000;
  const std::string response = CannedStream();
  LoopbackServer server([&response](const TestRequest&, TestConnection& conn) { conn.Write(response); });
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,)"
      R"("stream_options":{"include_usage":true}})";
  const std::vector<std::string> bodies(static_cast<size_t>(requests), body);
  std::printf("client_bench: %d streamed chat requests per level against %s\n", requests,
              server.url().c_str());
  std::printf("%-12s %12s %12s %18s %10s\n", "concurrency", "wall s", "req/s", "req/CPU-s (client)",
              "failed");
  double best = 0;
  for (int concurrency : {8, 32, 64}) {
    k3::client::LoadOptions options;
    options.endpoint = {server.url(), ""};
    options.concurrency = concurrency;
    const double cpu0 = ThreadCpuSeconds();
    const k3::client::LoadResult result = k3::client::RunLoad(bodies, options);
    const double cpu = ThreadCpuSeconds() - cpu0;
    const k3::client::BenchMetrics m = k3::client::ComputeMetrics(result.records, result.duration_s);
    const double rps = m.completed / result.duration_s;
    best = std::max(best, rps);
    std::printf("%-12d %12.2f %12.0f %18.0f %10d\n", concurrency, result.duration_s, rps, m.completed / cpu,
                m.failed);
  }
  std::printf(
      "best wall-clock rate %.0f req/s: %.2fx the 5,000 req/s target (server and client on the same %ld "
      "cores)\n",
      best, best / 5000.0, sysconf(_SC_NPROCESSORS_ONLN));
  return 0;
}
