// The steps of a MoE layer between its matmuls (spec §2.5) over a step's batch: grouping the (token, slot)
// pairs by expert, gathering the experts' input rows, scattering their outputs back to (token, slot) order
// and combining each token's slots. The router's top-k is RouteSigmoidTopK (layer_ops.h).
//
// Shapes: T tokens, E experts, Ek experts per token, Lw expert input/output width; R = T * Ek rows.
#pragma once

#include <cstdint>

#include "src/base/bf16.h"
#include "src/kernels/step_env.h"

namespace k3::kernels {

// experts [T, Ek] -> order [R]: the (token, slot) indices t * Ek + k grouped by expert (token order inside an
// expert), begin [E + 1]: expert e's rows are order[begin[e] .. begin[e + 1]). Returns the experts with rows.
int64_t GroupByExpert(StepEnv& env, const int32_t* experts, int64_t T, int64_t Ek, int64_t E, int32_t* begin,
                      int32_t* order);

// dst [n, width] = src rows rows[0 .. n) (on the pool).
void GatherRows(StepEnv& env, const float* src, int64_t width, const int32_t* rows, int64_t n, float* dst);
// src [n, width] = bf16(src), then dst[rows[i]] = src[i] (the experts' outputs back to (token, slot) order).
void RoundScatterRows(StepEnv& env, float* src, int64_t width, const int32_t* rows, int64_t n, float* dst);

// out [T, Lw] = bf16(sum_k weights[t, k] slot_out[t, k]) (fp32 sum in slot order), then RmsNorm(out;
// norm) where norm is not null (the latent norm).
void CombineExpertSlots(StepEnv& env, const float* slot_out, const float* weights, int64_t T, int64_t Ek,
                        int64_t Lw, const bf16* norm, float eps, float* out);

// out [rows, width] = bf16(out) when round_out; then, where shared is not null, out = bf16(out +
// bf16(shared)).
void RoundAddRows(StepEnv& env, float* out, bool round_out, float* shared, int64_t rows, int64_t width);

}  // namespace k3::kernels
