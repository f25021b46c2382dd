// Gated MLA (no RoPE) over a batch, absorbed latent form (spec §2.4).
#include "src/model/mla.h"

#include <cmath>

#include "src/kernels/latent_attention.h"
#include "src/kernels/layer_ops.h"
#include "src/kernels/mla_step.h"
#include "src/kernels/step_ops.h"

namespace k3::model {

void MlaForward(const LayerStep& step, const MlaWeights& w, int64_t mla_index, const float* x, float* out) {
  const io::ModelConfig& cfg = step.cfg;
  kernels::StepEnv& env = step.env;
  const int64_t T = step.T;
  const int64_t H = cfg.mla_num_heads, nope = cfg.qk_nope_head_dim, Rp = cfg.qk_rope_head_dim;
  const int64_t Q = nope + Rp, R = cfg.kv_lora_rank, Vh = cfg.v_head_dim, row_width = R + Rp;
  const kernels::MlaHeadDims dims{H, nope, Rp, R, Vh};
  kernels::ScratchArena::Frame frame(env.arena);
  auto take = [&](int64_t n) { return env.arena.Take<float>(static_cast<size_t>(n)); };
  float* q = take(T * H * Q);                                           // [T, H*Q]
  float* latent = take(T * row_width);                                  // [T, R + Rp]
  float* query = take(H * T * row_width);                               // [H, T, R + Rp] absorbed queries
  float* ctx = take(H * T * R);                                         // [H, T, R]
  float* o = take(T * H * Vh);                                          // [T, H*Vh]
  float* gate = w.g_proj.data != nullptr ? take(T * H * Vh) : nullptr;  // [T, H*Vh]
  float* q_low = cfg.q_lora_rank > 0 ? take(T * cfg.q_lora_rank) : nullptr;  // [T, q_lora]

  // 1. Every projection of x under one fork-join: q_a (or q), kv_a and the output gate; then
  //    q = q_b(q_a_layernorm(q_a(x))) when q is low rank: [T, H*Q].
  kernels::MatMulJob projections[3];
  size_t num_projections = 0;
  projections[num_projections++] =
      q_low != nullptr ? LinearJob(x, T, w.q_a_proj, q_low) : LinearJob(x, T, w.q_proj, q);
  projections[num_projections++] = LinearJob(x, T, w.kv_a_proj, latent);
  if (gate != nullptr) projections[num_projections++] = LinearJob(x, T, w.g_proj, gate);
  kernels::Linears(env, projections, num_projections);
  if (q_low != nullptr) {
    kernels::RmsNormRows(q_low, T, cfg.q_lora_rank, cfg.q_lora_rank, w.q_a_norm.data(), cfg.rms_norm_eps,
                         q_low);
    const kernels::MatMulJob q_b = LinearJob(q_low, T, w.q_b_proj, q);
    kernels::Linears(env, &q_b, 1);
  }
  // 2. Latent rows [c, k_pe]: c normalised, k_pe as projected; appended to each sequence's cache in its
  //    dtype (bf16 by default; they are bf16 values, so the store is exact).
  kernels::RmsNormRows(latent, T, R, row_width, w.kv_a_norm.data(), cfg.rms_norm_eps, latent);
  const size_t num_segments = step.segments.size();
  kernels::LatentSequence* sequences = env.arena.Take<kernels::LatentSequence>(num_segments);
  for (size_t i = 0; i < num_segments; ++i) {
    const SequenceSegment& seg = step.segments[i];
    sequences[i] = {seg.row_begin, seg.rows, seg.start_pos, seg.state->MlaRows(mla_index)};
  }
  const std::span<const kernels::LatentSequence> batch(sequences, num_segments);
  kernels::StoreLatentRows(env, latent, row_width, batch);
  // 3. Absorbed queries per head: [Wuk_h^T q_nope_h, q_pe_h] (fp32, not rounded).
  kernels::AbsorbQueries(env, dims, q, T, w.key_up_transposed.data(), query);
  // 4. Causal softmax attention over each sequence's cache: fp32 math, the rows read in place in the
  //    cache's dtype.
  kernels::CausalLatentAttention(env, {query, H, T, R, Rp, 1.0f / std::sqrt(static_cast<float>(Q))}, batch,
                                 ctx);
  // 5. o_h = bf16(Wuv_h ctx_h); 6. the optional sigmoid output gate (projected in step 1), then o_proj.
  kernels::ValueHeads(env, dims, ctx, T, w.kv_b_proj.data, gate, o);
  kernels::RowParallelLinear(env, LinearJob(o, T, w.o_proj, out));
}

}  // namespace k3::model
