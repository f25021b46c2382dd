// KDA attention layer (spec §2.3) over a batch: projections as one GEMM over all T tokens, then per
// sequence the short causal conv (tails carried in the state), gates, and the gated delta rule (the
// recurrence, or the chunked form for prefill chunks when LayerStep::kda_prefill_form says so), per-head
// gated RMSNorm and the output projection.
#pragma once

#include <cstdint>

#include "src/model/layer_util.h"
#include "src/model/weights.h"

namespace k3::model {

// x: [T, D] (input_layernorm output, bf16 values) -> out: [T, D]. Advances each segment's KDA state of
// layer slot `kda_index` by its rows. Sharded: the rank's heads; o_proj is row-parallel.
void KdaForward(const LayerStep& step, const KdaWeights& w, int64_t kda_index, const float* x, float* out);

}  // namespace k3::model
