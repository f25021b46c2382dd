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
  // Stream task k may take the compute tasks [k * #compute / #stream, (k + 1) * #compute / #stream), in
  // order, as many as prefetch all of it within their budgets; each prefetches the next slice of it. The
  // compute tasks it does not need, and a stream task with none, run alone: a unit holds one stream task
  // and only the compute tasks that feed it, so the pool keeps as many units to spread as it can.
  const size_t num_compute = compute.size(), num_stream = stream.size();
  for (size_t k = 0; k < num_stream; ++k) {
    const size_t c_begin = k * num_compute / num_stream, c_end = (k + 1) * num_compute / num_stream;
    if (c_begin == c_end) {
      single_unit(stream[k]);
      continue;
    }
    const uint32_t unit_begin = static_cast<uint32_t>(order->size());
    const OverlapTaskInfo& info = tasks[stream[k]];
    size_t c = c_begin, done = 0;
    for (; c < c_end && done < info.weight_bytes; ++c) {
      const double budget =
          kPrefetchBytesPerComputeByte * static_cast<double>(tasks[compute[c]].weight_bytes);
      const size_t share = std::min(info.weight_bytes - done, static_cast<size_t>(budget));
      order->push_back(ScheduledTask{compute[c], info.weights + done, share});
      done += share;
    }
    order->push_back(ScheduledTask{stream[k], nullptr, 0});
    units->push_back(ScheduleUnit{unit_begin, static_cast<uint32_t>(order->size())});
    for (; c < c_end; ++c) single_unit(compute[c]);
  }
  for (uint32_t t : other) single_unit(t);
}

}  // namespace k3::kernels
