// Latent MoE (spec §2.5; Kimi Linear's full-width MoE when the config has no latent width):
//   router (fp32): s = sigmoid(x @ Wgate^T); select top-Ek of s + correction_bias; weights are the
//   uncorrected s of the selected experts, renormalised (w / (sum w + 1e-20)) and scaled.
//   routed: z = bf16(latent_down x) (or x); each expert runs once over all the batch's tokens routed to
//   it; r = bf16(sum_k w_k y_k) in fp32; r = RMSNorm(r); r = bf16(latent_up r).
//   out = bf16(r + shared_mlp(x)).
#pragma once

#include <cstdint>
#include <vector>

#include "src/base/thread_pool.h"
#include "src/io/model_config.h"
#include "src/model/collectives.h"
#include "src/model/mlp.h"
#include "src/model/weights.h"

namespace k3::model {

// Router for T tokens: logits [T, E] (fp32 x @ Wgate^T) -> experts [T, Ek] and weights [T, Ek].
// Slots are ordered by descending selection score (ties: lower expert index first).
void RouteTokens(const float* logits, int64_t T, int64_t E, const float* correction_bias, int64_t top_k,
                 bool renormalize, float routed_scaling_factor, int32_t* experts, float* weights);

struct MoeScratch {
  std::vector<float> logits;          // [T, E]
  std::vector<int32_t> experts;       // [T, Ek]
  std::vector<float> weights;         // [T, Ek]
  std::vector<float> z;               // [T, Lw] expert inputs
  std::vector<int32_t> slot_order;    // [T*Ek] (token, slot) indices grouped by expert
  std::vector<int32_t> token_of;      // [T*Ek] the token of each of those rows
  std::vector<int32_t> expert_begin;  // [E + 1] offsets into slot_order
  std::vector<int32_t> expert_fill;   // [E]
  std::vector<float> gathered;        // [T * Ek, Lw] the experts' input rows, expert by expert
  std::vector<float> expert_out;      // [T * Ek, Lw] their outputs, same rows
  std::vector<float> slot_out;        // [T*Ek, Lw] expert outputs per (token, slot)
  std::vector<float> combined;        // [T, Lw]
  std::vector<float> shared_out;      // [T, D]
  MlpScratch mlp;                     // the routed experts' gate / up
  MlpScratch shared_mlp;              // the shared experts' gate / up [T, Is]
  int64_t experts_run = 0;            // distinct routed experts the last call ran (over all T tokens)
};

// x: [T, D] (post_attention_layernorm output) -> out: [T, D].
void MoeForward(const io::ModelConfig& cfg, const MoeWeights& w, const float* x, int64_t T,
                MoeScratch* scratch, ThreadPool* pool, float* out, Collectives* collectives = nullptr);

}  // namespace k3::model
