// Gated MLA without RoPE (spec §2.4) over a batch, in the absorbed (latent) form for prefill and decode:
//   latent row per token: [c (R, kv_a_layernorm'd), k_pe (Rp)] appended to the sequence's cache (bf16
//   values, stored in the state's cache dtype: bf16 by default, fp32 on request);
//   query per head: [Wuk_h^T q_nope_h (R), q_pe_h (Rp)], so score_h(t) = query · row_t / sqrt(Q);
//   ctx_h = sum_t p_t c_t (R), o_h = bf16(Wuv_h ctx_h), optional o *= sigmoid(g_proj x), then o_proj.
// Prefill and decode run the same arithmetic, so chunking a prompt does not change results.
#pragma once

#include <cstdint>

#include "src/model/layer_util.h"
#include "src/model/weights.h"

namespace k3::model {

// x: [T, D] (input_layernorm output) -> out: [T, D]. Writes each segment's latent rows into MLA cache
// slot `mla_index` at positions [start_pos, start_pos + rows) (the caller reserved them).
void MlaForward(const LayerStep& step, const MlaWeights& w, int64_t mla_index, const float* x, float* out);

}  // namespace k3::model
