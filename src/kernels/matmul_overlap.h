// Orders the pool tasks of one MatMulGroup so that memory-bound weight streams overlap compute-bound
// decoding (ops.h, "Overlap").
//
// At decode sizes (one or two x rows) a task over MXFP4 weights is bound by its instructions (on AVX2 it
// decodes a 32-value group in ~2.2 ns, reading ~8 GB/s of a core's ~20), while a task over bf16 weights is
// bound by memory. Run one after the other, the core waits on memory during the second and leaves memory
// idle during the first. So the schedule puts a bf16 task (a "stream") behind the MXFP4 tasks ("compute")
// of the same unit, and each of those compute tasks prefetches a slice of the stream's weights as it goes:
// by the time the stream runs, its weights are in cache. A unit is run by one thread, task after task, so
// the prefetched lines are in that core's cache.
//
// Only the order and the prefetches change: every task computes what it computes alone, so results are
// bit-identical with and without the overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3::kernels {

// What the schedule needs to know of one pool task.
struct OverlapTaskInfo {
  enum class Role : uint8_t {
    kCompute,  // bound by its instructions: can prefetch another task's weights while it runs
    kStream,   // bound by memory: its weights [weights, weights + weight_bytes) are one contiguous range
    kOther,
  };
  Role role;
  const char* weights;  // the task's weight rows (kStream)
  size_t weight_bytes;  // bytes of weight rows the task reads
};

// One task in the run order, and the range of another task's weights it prefetches while it runs.
struct ScheduledTask {
  uint32_t task;
  const char* prefetch_begin;
  size_t prefetch_bytes;  // 0: none
};

// A run of consecutive scheduled tasks [begin, end) that one thread runs in turn (one pool task).
struct ScheduleUnit {
  uint32_t begin, end;
};

// Step of the prefetches.
inline constexpr size_t kCacheLineBytes = 64;

// Bytes a compute task prefetches per byte of its own weights: an AVX2 MXFP4 task at one x row reads
// ~8 GB/s; 1.5x that takes a core to ~20 GB/s, the measured single-core read bandwidth.
inline constexpr double kPrefetchBytesPerComputeByte = 1.5;

// Fills `order` (every task exactly once) and `units`. With both compute and stream tasks, stream task k
// forms a unit with compute tasks from its share of them, [k * #compute / #stream, (k + 1) * #compute /
// #stream), in order: as many as it takes to prefetch all of it, each at most kPrefetchBytesPerComputeByte
// times its own weight bytes, in consecutive slices from its start; the stream task runs last. Compute
// tasks not needed, stream tasks with an empty share and the other tasks form units of one task each, so
// the pool keeps as many units to spread as it can. Otherwise the order is the task order and every unit
// one task.
void ScheduleOverlap(const std::vector<OverlapTaskInfo>& tasks, std::vector<ScheduledTask>* order,
                     std::vector<ScheduleUnit>* units);

}  // namespace k3::kernels
