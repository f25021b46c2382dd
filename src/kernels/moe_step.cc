// A MoE layer's steps between its matmuls (moe_step.h).
#include "src/kernels/moe_step.h"

#include <algorithm>

#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"
#include "src/kernels/parallel.h"

namespace k3::kernels {

int64_t GroupByExpert(StepEnv& env, const int32_t* experts, int64_t T, int64_t Ek, int64_t E, int32_t* begin,
                      int32_t* order) {
  // A counting sort, which keeps token order inside an expert.
  std::fill(begin, begin + E + 1, 0);
  for (int64_t i = 0; i < T * Ek; ++i) ++begin[experts[i] + 1];
  for (int64_t e = 0; e < E; ++e) begin[e + 1] += begin[e];
  ScratchArena::Frame frame(env.arena);
  int32_t* next = env.arena.Take<int32_t>(E);  // next free row per expert
  std::copy(begin, begin + E, next);
  for (int64_t i = 0; i < T * Ek; ++i) order[next[experts[i]]++] = static_cast<int32_t>(i);
  int64_t experts_run = 0;
  for (int64_t e = 0; e < E; ++e) experts_run += begin[e + 1] > begin[e];
  return experts_run;
}

void GatherRows(StepEnv& env, const float* src, int64_t width, const int32_t* rows, int64_t n, float* dst) {
  ParallelRows(env.pool, n, width, [&](int64_t r0, int64_t r1) {
    GatherRows(src, static_cast<size_t>(width), rows + r0, static_cast<size_t>(r1 - r0), dst + r0 * width);
  });
}

void RoundScatterRows(StepEnv& env, float* src, int64_t width, const int32_t* rows, int64_t n, float* dst) {
  ParallelRows(env.pool, n, width, [&](int64_t r0, int64_t r1) {
    RoundToBf16(src + r0 * width, static_cast<size_t>((r1 - r0) * width));
    ScatterRows(src + r0 * width, static_cast<size_t>(width), rows + r0, static_cast<size_t>(r1 - r0), dst);
  });
}

void CombineExpertSlots(StepEnv& env, const float* slot_out, const float* weights, int64_t T, int64_t Ek,
                        int64_t Lw, const bf16* norm, float eps, float* out) {
  ParallelRows(env.pool, T, Ek * Lw, [&](int64_t t0, int64_t t1) {
    float* rows = out + t0 * Lw;
    WeightedRowSum(slot_out + t0 * Ek * Lw, weights + t0 * Ek, static_cast<size_t>(t1 - t0),
                   static_cast<size_t>(Ek), static_cast<size_t>(Lw), rows);
    RoundToBf16(rows, static_cast<size_t>((t1 - t0) * Lw));
    if (norm != nullptr) RmsNormRows(rows, static_cast<size_t>(t1 - t0), Lw, Lw, norm, eps, rows);
  });
}

void RoundAddRows(StepEnv& env, float* out, bool round_out, float* shared, int64_t rows, int64_t width) {
  ParallelRows(env.pool, rows, width, [&](int64_t t0, int64_t t1) {
    const size_t n = static_cast<size_t>((t1 - t0) * width);
    if (round_out) RoundToBf16(out + t0 * width, n);
    if (shared != nullptr) {
      RoundToBf16(shared + t0 * width, n);
      AddRoundBf16(out + t0 * width, shared + t0 * width, n);
    }
  });
}

}  // namespace k3::kernels
