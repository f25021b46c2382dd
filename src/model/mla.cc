// Gated MLA (no RoPE) over a batch, absorbed latent form (spec §2.4).
#include "src/model/mla.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"
#include "src/model/latent_attention.h"
#include "src/model/layer_util.h"

namespace k3::model {

void MlaForward(const io::ModelConfig& cfg, const MlaWeights& w, int64_t mla_index, const float* x, int64_t T,
                std::span<const SequenceSegment> segments, MlaScratch* s, ThreadPool* pool, float* out,
                Collectives* collectives) {
  const int64_t H = cfg.mla_num_heads, nope = cfg.qk_nope_head_dim, Rp = cfg.qk_rope_head_dim;
  const int64_t Q = nope + Rp, R = cfg.kv_lora_rank, Vh = cfg.v_head_dim, row_width = R + Rp;
  float* q = Grow(s->q, T * H * Q);
  float* latent = Grow(s->latent, T * row_width);
  float* query = Grow(s->query, H * T * row_width);
  float* ctx = Grow(s->ctx, H * T * R);
  float* head_in = Grow(s->head_in, H * T * nope);
  float* head_out = Grow(s->head_out, H * T * std::max(R, Vh));
  float* o = Grow(s->o, T * H * Vh);
  float* gate = w.g_proj.data != nullptr ? Grow(s->gate, T * H * Vh) : nullptr;

  // 1. Every projection of x under one fork-join: q_a (or q), kv_a and the output gate; then
  //    q = q_b(q_a_layernorm(q_a(x))) when q is low rank: [T, H*Q].
  float* q_low = cfg.q_lora_rank > 0 ? Grow(s->q_low, T * cfg.q_lora_rank) : nullptr;
  kernels::MatMulJob projections[3];
  size_t num_projections = 0;
  projections[num_projections++] =
      q_low != nullptr ? LinearJob(x, T, w.q_a_proj, q_low) : LinearJob(x, T, w.q_proj, q);
  projections[num_projections++] = LinearJob(x, T, w.kv_a_proj, latent);
  if (gate != nullptr) projections[num_projections++] = LinearJob(x, T, w.g_proj, gate);
  Linears(projections, num_projections, pool);
  if (q_low != nullptr) {
    kernels::RmsNormRows(q_low, T, cfg.q_lora_rank, cfg.q_lora_rank, w.q_a_norm.data(), cfg.rms_norm_eps,
                         q_low);
    Linear(q_low, T, w.q_b_proj, q, pool);
  }
  // 2. Latent rows [c, k_pe]: c normalised, k_pe as projected; appended to each sequence's cache.
  kernels::RmsNormRows(latent, T, R, row_width, w.kv_a_norm.data(), cfg.rms_norm_eps, latent);
  //    The cache holds them in its dtype (bf16 by default; they are bf16 values, so the store is exact).
  for (const SequenceSegment& seg : segments) {
    const float* src = latent + seg.row_begin * row_width;
    if (seg.state->cache_dtype() == CacheDtype::kBf16) {
      bf16** cache_rows = Grow(s->cache_rows_bf16, static_cast<size_t>(seg.rows));
      for (int64_t i = 0; i < seg.rows; ++i)
        cache_rows[i] = seg.state->MlaRowBf16(mla_index, seg.start_pos + i);
      kernels::StoreRowsBf16(src, row_width, cache_rows, seg.rows);
    } else {
      float** cache_rows = Grow(s->cache_rows, static_cast<size_t>(seg.rows));
      for (int64_t i = 0; i < seg.rows; ++i)
        cache_rows[i] = seg.state->MlaRowF32(mla_index, seg.start_pos + i);
      kernels::StoreRows(src, row_width, cache_rows, seg.rows);
    }
  }
  // 3. Absorbed queries per head: [Wuk_h^T q_nope_h, q_pe_h] (fp32, not rounded); the H products in one
  //    group.
  s->head_jobs.clear();
  for (int64_t h = 0; h < H; ++h) {
    kernels::CopyRows(q + h * Q, H * Q, head_in + h * T * nope, nope, T, nope);  // q_nope_h [T, nope]
    s->head_jobs.push_back(kernels::MatMulJob::Bf16(
        head_in + h * T * nope, T, nope, w.key_up_transposed.data() + h * R * nope, R, head_out + h * T * R));
  }
  kernels::MatMulGroup(s->head_jobs.data(), s->head_jobs.size(), pool);
  for (int64_t h = 0; h < H; ++h) {  // query[h, t] = [absorbed q_nope (R), q_pe (Rp)]
    kernels::CopyRows(head_out + h * T * R, R, query + h * T * row_width, row_width, T, R);
    kernels::CopyRows(q + h * Q + nope, H * Q, query + h * T * row_width + R, row_width, T, Rp);
  }
  // 4. Causal softmax attention over each sequence's cache (latent_attention.h): fp32 math, the rows read
  //    in place in the cache's dtype, tasks over sequences, heads and key chunks.
  CausalLatentAttention(H, R, Rp, mla_index, query, T, segments, 1.0f / std::sqrt(static_cast<float>(Q)),
                        &s->attention, pool, ctx);
  // 5. o_h = bf16(Wuv_h ctx_h): Wuv_h is rows [h*(nope+Vh) + nope, (h+1)*(nope+Vh)) of kv_b; one group.
  s->head_jobs.clear();
  for (int64_t h = 0; h < H; ++h) {
    const bf16* wuv = w.kv_b_proj.data + (h * (nope + Vh) + nope) * R;
    s->head_jobs.push_back(kernels::MatMulJob::Bf16(ctx + h * T * R, T, R, wuv, Vh, head_out + h * T * Vh));
  }
  kernels::MatMulGroup(s->head_jobs.data(), s->head_jobs.size(), pool);
  // 6. Optional sigmoid output gate (projected in step 1; fp32 product of the bf16 values, rounded
  //    once), then o_proj.
  ParallelRows(pool, T, H * Vh, [&](int64_t t0, int64_t t1) {
    const int64_t rows = t1 - t0;
    for (int64_t h = 0; h < H; ++h) {
      kernels::CopyRows(head_out + (h * T + t0) * Vh, Vh, o + t0 * H * Vh + h * Vh, H * Vh, rows, Vh);
    }
    float* o_rows = o + t0 * H * Vh;
    kernels::RoundToBf16(o_rows, rows * H * Vh);
    if (gate != nullptr) kernels::SigmoidGateRoundBf16(o_rows, gate + t0 * H * Vh, rows * H * Vh);
  });
  RowParallelLinear(o, T, w.o_proj, out, pool, collectives);
}

}  // namespace k3::model
