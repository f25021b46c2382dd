// LoadProgress: what a model load is doing right now (its phase and, while weights stream in, the bytes
// read of the total), written by the loading thread and read by whoever reports it: the server's /health
// answers 503 with it while the model loads (a 1.56 TB checkpoint takes minutes; a probe or an operator
// sees how far it got). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace k3::model {

class LoadProgress {
 public:
  struct Snapshot {
    std::string phase;         // e.g. "reading weights from s3://bucket/prefix"
    uint64_t bytes_done = 0;   // weight bytes read so far (0 when the phase reads none)
    uint64_t bytes_total = 0;  // weight bytes to read (0 when unknown)
    double elapsed_s = 0;      // since the load started
    double phase_s = 0;        // since this phase started
  };

  LoadProgress();
  void SetPhase(std::string phase);
  void SetTotalBytes(uint64_t total) { bytes_total_.store(total, std::memory_order_relaxed); }
  void AddBytes(uint64_t n) { bytes_done_.fetch_add(n, std::memory_order_relaxed); }
  Snapshot Get() const;

 private:
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start_;
  mutable std::mutex mu_;
  std::string phase_;
  Clock::time_point phase_start_;
  std::atomic<uint64_t> bytes_done_{0};
  std::atomic<uint64_t> bytes_total_{0};
};

// {"phase", "elapsed_s", and while bytes are known: "bytes_done", "bytes_total", "percent", "bytes_per_s"
// (over the phase), "eta_s"} for a status body.
nlohmann::json LoadProgressJson(const LoadProgress::Snapshot& snapshot);

}  // namespace k3::model
