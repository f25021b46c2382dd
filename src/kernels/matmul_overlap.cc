// ScheduleOverlap (matmul_overlap.h): pairs compute-bound and memory-bound matmul tasks.
#include "src/kernels/matmul_overlap.h"

#include <algorithm>

namespace k3::kernels {

void ScheduleOverlap(const std::vector<OverlapTaskInfo>& tasks, std::vector<ScheduledTask>* order,
                     std::vector<ScheduleUnit>* units) {
  order->clear();
  units->clear();
  thread_local std::vector<uint32_t> compute, stream, other;
  compute.clear();
  stream.clear();
  other.clear();
  for (uint32_t t = 0; t < tasks.size(); ++t) {
    switch (tasks[t].role) {
      case OverlapTaskInfo::Role::kCompute:
        compute.push_back(t);
        break;
      case OverlapTaskInfo::Role::kStream:
        stream.push_back(t);
        break;
      case OverlapTaskInfo::Role::kOther:
        other.push_back(t);
        break;
    }
  }
  auto single_unit = [&](uint32_t t) {
    const uint32_t at = static_cast<uint32_t>(order->size());
    order->push_back(ScheduledTask{t, nullptr, 0});
    units->push_back(ScheduleUnit{at, at + 1});
  };
  if (compute.empty() || stream.empty()) {
    for (uint32_t t = 0; t < tasks.size(); ++t) single_unit(t);
    return;
  }
  // Unit p takes compute tasks [c_begin, c_end) and stream tasks [s_begin, s_end), both in proportion.
  const size_t pairs = std::min(compute.size(), stream.size());
  size_t c = 0, s = 0;
  for (size_t p = 0; p < pairs; ++p) {
    const size_t c_end = (p + 1) * compute.size() / pairs;
    const size_t s_end = (p + 1) * stream.size() / pairs;
    const uint32_t unit_begin = static_cast<uint32_t>(order->size());
    const OverlapTaskInfo& first_stream = tasks[stream[s]];
    size_t compute_bytes = 0;
    for (size_t i = c; i < c_end; ++i) compute_bytes += tasks[compute[i]].weight_bytes;
    const double budget = kPrefetchBytesPerComputeByte * static_cast<double>(compute_bytes);
    const size_t total = std::min(first_stream.weight_bytes, static_cast<size_t>(budget));
    // Compute task i prefetches the slice [done, done + share) of the stream, share in proportion to its
    // bytes (the last one takes the rest).
    size_t done = 0;
    for (; c < c_end; ++c) {
      const OverlapTaskInfo& info = tasks[compute[c]];
      size_t share = total - done;
      if (c + 1 < c_end && compute_bytes > 0) {
        share = std::min(
            share, static_cast<size_t>(static_cast<double>(total) * static_cast<double>(info.weight_bytes) /
                                       static_cast<double>(compute_bytes)));
      }
      order->push_back(ScheduledTask{compute[c], first_stream.weights + done, share});
      done += share;
    }
    for (; s < s_end; ++s) order->push_back(ScheduledTask{stream[s], nullptr, 0});
    units->push_back(ScheduleUnit{unit_begin, static_cast<uint32_t>(order->size())});
  }
  for (uint32_t t : other) single_unit(t);
}

}  // namespace k3::kernels
