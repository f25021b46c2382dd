// serve_bench: end-to-end figures of `k3 serve` on loopback. Starts the server (embedded tiny-k3, or
// --model DIR such as a generated mini-k3) and prints medians and ratios:
//   1. GET /health requests/s over keep-alive connections (target >= 20,000 with 2 cores)
//   (each figure is printed with the load average: the machine may be shared)
//   2. per-token SSE overhead: streaming minus non-streaming time of the same greedy completion, per token
//   3. aggregate decode tokens/s at concurrency 1, 4 and 16, and the batching speed-up over 1
//   4. time to first token of a long prompt without and with a prefix-cache hit
//   serve_bench --k3 build/k3 [--model DIR] [--seconds 5] [--connections 16] [--trials 5]
//               [--sse-tokens 512] [--decode-tokens 64]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/server/testing/http_client.h"

namespace {

using k3::server::testing::BuildRequest;
using k3::server::testing::Fetch;
using k3::server::testing::TestConnection;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "load 1.23 0.98 0.75" from /proc/loadavg (the machine is shared: figures are read beside it).
std::string LoadAverage() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return "load ?";
  double one = 0, five = 0, fifteen = 0;
  const int n = std::fscanf(f, "%lf %lf %lf", &one, &five, &fifteen);
  std::fclose(f);
  return n == 3 ? fmt::format("load {:.2f} {:.2f} {:.2f}", one, five, fifteen) : "load ?";
}

// The child `k3 serve` process.
struct Server {
  pid_t pid = -1;
  uint16_t port = 0;
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
};

bool StartServer(const std::string& k3, const std::string& model, Server* server) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  server->pid = fork();
  if (server->pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    std::vector<std::string> args = {k3,
                                     "serve",
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     "0",
                                     "--served-model-name",
                                     "bench",
                                     "--max-num-seqs",
                                     "16",
                                     "--prefix-snapshot-interval",
                                     "64"};
    if (!model.empty()) args.insert(args.end(), {"--model", model});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(k3.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string log;
  const std::regex listening("listening on http://[^\\s:]+:(\\d+)");
  char buf[4096];
  std::smatch m;
  while (true) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) {
      std::fprintf(stderr, "k3 serve ended before listening:\n%s\n", log.c_str());
      return false;
    }
    log.append(buf, static_cast<size_t>(n));
    if (std::regex_search(log, m, listening)) break;
  }
  server->port = static_cast<uint16_t>(std::stoi(m[1]));
  // Keep draining the child's output so it never blocks on a full pipe.
  std::thread([fd = fds[0]] {
    char sink[4096];
    while (read(fd, sink, sizeof(sink)) > 0) {
    }
    close(fd);
  }).detach();
  const auto deadline = Clock::now() + std::chrono::minutes(10);
  while (Clock::now() < deadline) {
    auto r = Fetch(server->port, "GET", "/health");
    if (r.ok() && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// One completion; returns seconds to the first SSE event carrying text (streaming) or to the end.
struct Timing {
  double first = 0;
  double total = 0;
  bool ok = false;
};
Timing Complete(TestConnection& conn, const std::string& prompt, int max_tokens, bool stream) {
  const std::string body = fmt::format(
      R"({{"model":"bench","prompt":"{}","max_tokens":{},"temperature":0,"ignore_eos":true,"stream":{}}})",
      prompt, max_tokens, stream ? "true" : "false");
  Timing t;
  const auto t0 = Clock::now();
  if (!conn.Send(BuildRequest("POST", "/v1/completions", body, {"Content-Type: application/json"})).ok())
    return t;
  auto r = conn.Read(std::chrono::minutes(10), [&](std::string_view chunk) {
    if (t.first == 0 && chunk.find("\"text\":\"") != std::string_view::npos &&
        chunk.find("\"text\":\"\"") == std::string_view::npos) {
      t.first = Since(t0);
    }
  });
  t.total = Since(t0);
  if (t.first == 0) t.first = t.total;
  t.ok = r.ok() && r->status == 200;
  if (!t.ok)
    std::fprintf(stderr, "request failed: %s\n", r.ok() ? r->body.c_str() : r.status().ToString().c_str());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"k3 serve benchmark"};
  std::string k3 = "build/k3";
  std::string model;
  double seconds = 5;
  int connections = 16;
  int trials = 5;
  int sse_tokens = 512;
  int decode_tokens = 64;
  app.add_option("--k3", k3, "the k3 binary")->capture_default_str();
  app.add_option("--model", model, "checkpoint directory (default: the embedded tiny-k3)");
  app.add_option("--seconds", seconds, "duration of the /health load")->capture_default_str();
  app.add_option("--connections", connections, "keep-alive connections for /health")->capture_default_str();
  app.add_option("--trials", trials, "repetitions behind each median")->capture_default_str();
  app.add_option("--sse-tokens", sse_tokens, "tokens of each SSE-overhead completion (mini-k3: e.g. 32)")
      ->capture_default_str();
  app.add_option("--decode-tokens", decode_tokens, "tokens of each decode-throughput completion")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure appears as soon as it is measured

  Server server;
  if (!StartServer(k3, model, &server)) return 1;
  std::printf("k3 serve on 127.0.0.1:%u, model %s, %u hardware threads shared with this client [%s]\n",
              server.port, model.empty() ? "embedded tiny-k3" : model.c_str(),
              std::thread::hardware_concurrency(), LoadAverage().c_str());

  // 1. /health requests/s: `trials` runs of `seconds` each, median.
  {
    std::vector<double> rates;
    std::vector<double> latencies_us;
    for (int trial = 0; trial < trials; ++trial) {
      std::atomic<int64_t> done{0};
      std::atomic<bool> stop{false};
      std::mutex mu;
      std::vector<std::thread> threads;
      const auto t0 = Clock::now();
      for (int c = 0; c < connections; ++c) {
        threads.emplace_back([&] {
          auto conn = TestConnection::Connect(server.port);
          if (!conn.ok()) return;
          const std::string req = BuildRequest("GET", "/health");
          std::vector<double> local;
          while (!stop.load(std::memory_order_relaxed)) {
            const auto s = Clock::now();
            if (!conn->Send(req).ok() || !conn->Read().ok()) return;
            local.push_back(Since(s) * 1e6);
            done.fetch_add(1, std::memory_order_relaxed);
          }
          std::lock_guard<std::mutex> lock(mu);
          latencies_us.insert(latencies_us.end(), local.begin(), local.end());
        });
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      stop.store(true);
      for (auto& t : threads) t.join();
      rates.push_back(static_cast<double>(done.load()) / Since(t0));
    }
    const double rps = Median(rates);
    std::printf(
        "health: %.0f requests/s (median of %d runs, %.0f .. %.0f) over %d keep-alive connections (target >= "
        "20,000: %s), median latency %.0f us [%s]\n",
        rps, trials, *std::min_element(rates.begin(), rates.end()),
        *std::max_element(rates.begin(), rates.end()), connections, rps >= 20000 ? "met" : "NOT met",
        Median(latencies_us), LoadAverage().c_str());
  }

  // 2. Per-token SSE overhead.
  {
    // Each trial runs the same greedy completion both ways back to back; the median of the paired
    // differences is the SSE cost (one event per token) and its spread shows the noise.
    const int tokens = sse_tokens;
    std::vector<double> plain, streamed, diffs;
    auto conn = TestConnection::Connect(server.port);
    if (!conn.ok()) return 1;
    Complete(*conn, "warm up", tokens, false);
    for (int i = 0; i < 2 * trials + 1; ++i) {
      plain.push_back(Complete(*conn, "The history of", tokens, false).total);
      streamed.push_back(Complete(*conn, "The history of", tokens, true).total);
      diffs.push_back((streamed.back() - plain.back()) / tokens * 1e6);
    }
    const double per_token_us = Median(diffs);
    std::printf(
        "sse: %d tokens non-streaming %.1f ms, streaming %.1f ms: %.1f us per token (%.1f%% of the "
        "per-token time; paired differences %.1f .. %.1f us) [%s]\n",
        tokens, Median(plain) * 1e3, Median(streamed) * 1e3, per_token_us,
        100.0 * per_token_us / (Median(plain) / tokens * 1e6), *std::min_element(diffs.begin(), diffs.end()),
        *std::max_element(diffs.begin(), diffs.end()), LoadAverage().c_str());
  }

  // 3. Decode throughput at concurrency 1, 4, 16.
  {
    const int tokens = decode_tokens;
    double base = 0;
    for (int concurrency : {1, 4, 16}) {
      std::vector<double> rates;
      for (int trial = 0; trial < std::max(1, trials / 2); ++trial) {
        std::vector<std::thread> threads;
        std::atomic<int> failures{0};
        const auto t0 = Clock::now();
        for (int c = 0; c < concurrency; ++c) {
          threads.emplace_back([&, c] {
            auto conn = TestConnection::Connect(server.port);
            if (!conn.ok() ||
                !Complete(*conn, fmt::format("Client {} trial {} says", c, trial), tokens, false).ok) {
              failures.fetch_add(1);
            }
          });
        }
        for (auto& t : threads) t.join();
        if (failures.load() == 0) rates.push_back(concurrency * tokens / Since(t0));
      }
      const double rate = Median(rates);
      if (concurrency == 1) base = rate;
      std::printf("decode: concurrency %2d: %.1f tokens/s aggregate (x%.2f over concurrency 1) [%s]\n",
                  concurrency, rate, base > 0 ? rate / base : 0.0, LoadAverage().c_str());
    }
  }

  // 4. TTFT of a long prompt, cold and with a prefix hit.
  {
    std::vector<double> cold, warm;
    auto conn = TestConnection::Connect(server.port);
    if (!conn.ok()) return 1;
    for (int i = 0; i < trials; ++i) {
      std::string prompt = fmt::format("Session {} begins.", i);
      for (int k = 0; k < 120; ++k) prompt += fmt::format(" Fact {} of session {} is noted.", k, i);
      cold.push_back(Complete(*conn, prompt, 1, true).first);
      warm.push_back(Complete(*conn, prompt, 1, true).first);
    }
    std::printf("ttft: long prompt without a prefix hit %.1f ms, with a hit %.1f ms (x%.2f faster) [%s]\n",
                Median(cold) * 1e3, Median(warm) * 1e3, Median(warm) > 0 ? Median(cold) / Median(warm) : 0.0,
                LoadAverage().c_str());
  }
  return 0;
}
