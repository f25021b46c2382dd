// LoadProgress (load_progress.h): a mutex for the phase text, atomics for the byte counts.
#include "src/model/load_progress.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

namespace k3::model {

LoadProgress::LoadProgress() : start_(Clock::now()), phase_("starting"), phase_start_(start_) {}

void LoadProgress::SetPhase(std::string phase) {
  std::lock_guard lock(mu_);
  phase_ = std::move(phase);
  phase_start_ = Clock::now();
}

LoadProgress::Snapshot LoadProgress::Get() const {
  Snapshot s;
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard lock(mu_);
    s.phase = phase_;
    s.phase_s = std::chrono::duration<double>(now - phase_start_).count();
  }
  s.elapsed_s = std::chrono::duration<double>(now - start_).count();
  s.bytes_done = bytes_done_.load(std::memory_order_relaxed);
  s.bytes_total = bytes_total_.load(std::memory_order_relaxed);
  return s;
}

nlohmann::json LoadProgressJson(const LoadProgress::Snapshot& s) {
  const auto round1 = [](double x) { return std::round(x * 10) / 10; };
  nlohmann::json out = {{"phase", s.phase}, {"elapsed_s", round1(s.elapsed_s)}};
  if (s.bytes_total > 0) {
    const uint64_t done = std::min(s.bytes_done, s.bytes_total);
    const double rate = s.phase_s > 0 ? static_cast<double>(s.bytes_done) / s.phase_s : 0;
    out["bytes_done"] = done;
    out["bytes_total"] = s.bytes_total;
    out["percent"] = round1(100.0 * static_cast<double>(done) / static_cast<double>(s.bytes_total));
    out["bytes_per_s"] = static_cast<uint64_t>(rate);
    if (rate > 0) out["eta_s"] = round1(static_cast<double>(s.bytes_total - done) / rate);
  }
  return out;
}

}  // namespace k3::model
