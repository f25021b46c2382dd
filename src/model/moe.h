// Latent MoE (spec §2.5; Kimi Linear's full-width MoE when the config has no latent width):
//   router (fp32): s = sigmoid(x @ Wgate^T); select top-Ek of s + correction_bias; weights are the
//   uncorrected s of the selected experts, renormalised (w / (sum w + 1e-20)) and scaled.
//   routed: z = bf16(latent_down x) (or x); each expert runs once over all the batch's tokens routed to
//   it; r = bf16(sum_k w_k y_k) in fp32; r = RMSNorm(r); r = bf16(latent_up r).
//   out = bf16(r + shared_mlp(x)).
#pragma once

#include <cstdint>

#include "src/model/layer_util.h"
#include "src/model/weights.h"

namespace k3::model {

// Router for T tokens: logits [T, E] (fp32 x @ Wgate^T) -> experts [T, Ek] and weights [T, Ek].
// Slots are ordered by descending selection score (ties: lower expert index first).
void RouteTokens(const float* logits, int64_t T, int64_t E, const float* correction_bias, int64_t top_k,
                 bool renormalize, float routed_scaling_factor, int32_t* experts, float* weights);

// x: [T, D] (post_attention_layernorm output) -> out: [T, D]. Returns the distinct routed experts it ran
// (over all T tokens; this rank's when sharded).
int64_t MoeForward(const LayerStep& step, const MoeWeights& w, const float* x, float* out);

}  // namespace k3::model
