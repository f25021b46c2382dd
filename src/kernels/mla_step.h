// The head-by-head steps of an MLA layer in the absorbed form (spec §2.4) over a step's batch: the latent
// rows into each sequence's cache, the absorbed queries, and the value heads back to [T, H*Vh]. The
// attention between them is latent_attention.h; the projections around them are matmuls (step_ops.h).
//
// Shapes: T rows, H heads, nope + Rp = Q query head width, R kv_lora rank, Vh value head width.
#pragma once

#include <cstdint>
#include <span>

#include "src/base/bf16.h"
#include "src/kernels/latent_rows.h"
#include "src/kernels/step_env.h"

namespace k3::kernels {

// latent [T, width] (bf16 values) -> each sequence's cache rows at positions [start_pos, start_pos + rows)
// in its dtype (exact: they are bf16 values).
void StoreLatentRows(StepEnv& env, const float* latent, int64_t width,
                     std::span<const LatentSequence> sequences);

// query [H, T, R + Rp] = per head [Wuk_h^T q_nope_h (R), q_pe_h (Rp)] (fp32, not rounded) from q [T, H*Q]
// and key_up_transposed [H, R, nope] (Wuk_h^T); the H products under one fork-join.
struct MlaHeadDims {
  int64_t H, nope, Rp, R, Vh;
};
void AbsorbQueries(StepEnv& env, const MlaHeadDims& dims, const float* q, int64_t T,
                   const bf16* key_up_transposed, float* query);

// o [T, H*Vh] = bf16(Wuv_h ctx_h) per head, then o = bf16(o * sigmoid(gate)) where gate [T, H*Vh] is not
// null. ctx: [H, T, R]; kv_b [H*(nope+Vh), R] holds per head nope rows of Wuk then Vh rows of Wuv.
void ValueHeads(StepEnv& env, const MlaHeadDims& dims, const float* ctx, int64_t T, const bf16* kv_b,
                const float* gate, float* o);

}  // namespace k3::kernels
