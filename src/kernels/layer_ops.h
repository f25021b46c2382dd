// The layers' steps that are not GEMMs: residual adds, gates, routing, row gathers and scatters, the
// expert combine, the KDA decay gate and head gathers, the short causal conv and the attention of one
// query over the MLA latent cache. They live here, beside the matmuls, so src/model only composes
// kernels and a device backend replaces this file's functions, not model code (design.md "Layers").
// Arithmetic is exactly what the layers did inline before (same operations, same order), so results are
// bit-identical; each has a plain loop as its definition, except the short conv, which is SIMD (its plain
// loop is kept as scalar::CausalConvSilu).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "src/base/bf16.h"

namespace k3::kernels {

// h[i] = bf16(h[i] + a[i]) (the residual add, rounded as the reference's bf16 activations are).
void AddRoundBf16(float* h, const float* a, size_t n);
// o[i] = bf16(o[i] * sigmoid(gate[i])).
void SigmoidGateRoundBf16(float* o, const float* gate, size_t n);
// x[i] = sigmoid(x[i]).
void SigmoidInPlace(float* x, size_t n);

// dst[i] = src[rows[i]] for rows of `width` floats.
void GatherRows(const float* src, size_t width, const int32_t* rows, size_t n, float* dst);
void GatherRows(const float* src, size_t width, const int64_t* rows, size_t n, float* dst);
// dst[rows[i]] = src[i].
void ScatterRows(const float* src, size_t width, const int32_t* rows, size_t n, float* dst);
// out[t] = sum_j weights[t*k + j] * rows[t*k + j] (fp32, j in order), t < T, rows of `width`.
void WeightedRowSum(const float* rows, const float* weights, size_t T, size_t k, size_t width, float* out);

// MoE routing for T tokens over E experts (spec §2.5): score = sigmoid(logit); the top_k experts by
// score + correction_bias (ties: lower index) get weight score, renormalised over the k if asked, times
// routed_scaling_factor. experts / weights: [T, top_k].
void RouteSigmoidTopK(const float* logits, size_t T, size_t E, const float* correction_bias, size_t top_k,
                      bool renormalize, float routed_scaling_factor, int32_t* experts, float* weights);

// KDA decay gate in place over g [T, H*K] (f_b outputs): u = g + dt_bias[h*K + d];
// g = lower_bound * sigmoid(a_exp[h] * u) when has_lower_bound, else -a_exp[h] * softplus(u).
void KdaDecayGate(float* g, const float* dt_bias, const float* a_exp, size_t T, size_t H, size_t K,
                  bool has_lower_bound, float lower_bound);
// One head's rows into contiguous [n, width]: dst[i] = src[i*stride + offset ..] (* scale / ||row||
// with the l2 norm sqrt(sum x^2 + 1e-6) when l2norm).
void GatherHeadRows(const float* src, size_t stride, size_t offset, size_t n, size_t width, bool l2norm,
                    float scale, float* dst);
// The inverse: dst[i*stride + offset ..] = src[i] for n rows of `width`.
void ScatterHeadRows(const float* src, size_t n, size_t width, size_t stride, size_t offset, float* dst);
// Strided to strided: dst[i*dst_stride ..] = src[i*src_stride ..] for n rows of `width` (head layouts
// [T, H, Q] <-> [H, T, Q], a column block of every row).
void CopyRows(const float* src, size_t src_stride, float* dst, size_t dst_stride, size_t n, size_t width);
// rows[i][0 .. width) = src[i*width ..] (rows of a paged cache, each at its own address).
void StoreRows(const float* src, size_t width, float* const* rows, size_t n);
// The same into bf16 rows: rows[i][c] = bf16(src[i*width + c]) (nearest even; exact for bf16 values).
void StoreRowsBf16(const float* src, size_t width, bf16* const* rows, size_t n);
// y[i*stride ..] = RmsNorm(x[i*stride .. + n); w) for `rows` rows (in place when y == x).
void RmsNormRows(const float* x, size_t rows, size_t n, size_t stride, const bf16* w, float eps, float* y);
// y[i*n ..] = GatedRmsNorm(o[i*n ..], gate[i*n ..]; w) for `rows` contiguous rows of n (per-head norms
// over [T, H, V] are T*H rows of V).
void GatedRmsNormRows(const float* o, const float* gate, const float* w, size_t rows, size_t n, float eps,
                      float* y);
// Depthwise causal conv + SiLU of channels [c0, c1) of one sequence's `rows` new rows:
//   c[i, ch] = sum_j taps[ch*W + j] * raw[i - (W-1) + j, ch] (rows before the first from tail [W-1, P]),
//   out[i, ch] = bf16(silu(c)); then the tail keeps the last W-1 raw rows. raw / out: rows of P floats
//   starting at the sequence's first row; scratch: W * (c1 - c0) floats. SIMD across the channels
//   (kda_ops-inl.h, dispatched by ops.cc): the sum fused, exp hwy's, so it agrees with the reference below
//   to fp32 rounding noise before the bf16 rounding.
void CausalConvSilu(const float* raw, const float* taps, size_t W, size_t P, size_t rows, size_t c0,
                    size_t c1, float* tail, float* scratch, float* out);
namespace scalar {
// The plain loops (new_tail: W scratch floats): the reference of layer_ops_test.
void CausalConvSilu(const float* raw, const float* taps, size_t W, size_t P, size_t rows, size_t c0,
                    size_t c1, float* tail, float* new_tail, float* out);
}  // namespace scalar

// The scores of latent attention: scores[g * visible + j] = (queries[g] . rows[j]) * scale for g <
// num_queries, j < visible, each dot product summed as DotBf16 sums one pair (ops.h), whatever the number of
// queries or rows: fp32 rows and bf16 rows holding the same values give the same bits. Tiles of queries by
// rows run side by side, each row read once per tile of up to 4 queries (ops-inl.h).
void LatentScores(const float* const* queries, size_t num_queries, const float* const* rows, size_t visible,
                  size_t width, float scale, float* scores);
void LatentScores(const float* const* queries, size_t num_queries, const bf16* const* rows, size_t visible,
                  size_t width, float scale, float* scores);

// Softmax attention of one query over `visible` cached rows (each `width` floats; rows[j] its address):
// scores[j] = (query . row_j) * scale, softmax, ctx [ctx_width] = sum_j p_j row_j[0 .. ctx_width).
// Where max / sum are not null they receive the softmax's largest score and its sum of exp(score - max):
// what CombineLatentChunks needs to join attention over chunks of the rows.
void LatentAttention(const float* query, const float* const* rows, size_t visible, size_t width,
                     size_t ctx_width, float scale, float* scores, float* ctx, float* max = nullptr,
                     float* sum = nullptr);
// LatentAttention of `num_queries` queries over the same rows, bit for bit per query: the scores of all the
// queries in one LatentScores call (each row read once per tile of up to 4 queries), then each query's
// softmax and context as LatentAttention's. scores: [num_queries, visible] scratch; max, sum: null or
// [num_queries].
void LatentAttentionQueries(const float* const* queries, size_t num_queries, const float* const* rows,
                            size_t visible, size_t width, size_t ctx_width, float scale, float* scores,
                            float* const* ctx, float* max = nullptr, float* sum = nullptr);
// The same over bf16 rows, read in place (LatentScores, AxpyBf16: no fp32 copy of the cache): what
// LatentAttention gives over the rows widened to fp32, bit for bit.
void LatentAttentionBf16(const float* query, const bf16* const* rows, size_t visible, size_t width,
                         size_t ctx_width, float scale, float* scores, float* ctx);
// LatentAttentionBf16 of `num_queries` queries over the same rows (the heads of one token), bit for bit
// per query; each row is read once per pass of up to 4 queries instead of once per query, and the rows are
// taken in blocks of 256 that every query finishes before the next block, so a long cache is streamed
// from memory twice per call, not twice per 4 queries (ops-inl.h).
// scores: [num_queries, visible] scratch; queries[g] [width], ctx[g] [ctx_width]; max, sum: null or
// [num_queries], each query's softmax statistics as in LatentAttention.
void LatentAttentionBf16Queries(const float* const* queries, size_t num_queries, const bf16* const* rows,
                                size_t visible, size_t width, size_t ctx_width, float scale, float* scores,
                                float* const* ctx, float* max = nullptr, float* sum = nullptr);

// ---- attention over key chunks (flash decoding) ---------------------------------------------------------
// A query that sees more than kLatentKeysPerChunk cached rows attends over the chunks of keys
// [c * kLatentKeysPerChunk, (c + 1) * kLatentKeysPerChunk) one at a time (the calls above on each chunk,
// with their softmax statistics), and CombineLatentChunks joins them. Chunks start at fixed positions of
// the sequence, so a query's result does not depend on how the chunks were spread over threads, on the
// batch, or on prefill against decode; a query that sees at most one chunk gets the one-call result.
// Chunks let the keys of one long sequence be split over threads (each thread reads its part of the cache
// once for all heads) and bound the scores' scratch.
inline constexpr size_t kLatentKeysPerChunk = 1024;
inline size_t LatentKeyChunks(size_t visible) {
  return (visible + kLatentKeysPerChunk - 1) / kLatentKeysPerChunk;
}
// ctx [ctx_width] = sum_c w_c chunk_ctx[c] in c order, w_c = sum[c] exp(max[c] - M) / sum_c' sum[c']
// exp(max[c'] - M), M = max_c max[c]: the softmax over all the chunks' scores. chunk_ctx: [chunks,
// ctx_width], each chunk's context; max, sum: [chunks], its softmax statistics. chunks >= 1.
void CombineLatentChunks(const float* chunk_ctx, const float* max, const float* sum, size_t chunks,
                         size_t ctx_width, float* ctx);

// Heads per LatentAttentionBf16Queries call when `heads` heads of a token are cut into tasks for
// `threads` threads: two tasks a thread (so one slowed thread does not hold up the step), each a whole
// number of passes of 4 heads. Fewer, wider tasks stream the cache fewer times.
inline size_t LatentAttentionHeadsPerTask(size_t heads, size_t threads) {
  const size_t tasks = 2 * std::max<size_t>(1, threads);
  const size_t per_task = (heads + tasks - 1) / tasks;
  return std::max<size_t>(4, (per_task + 3) / 4 * 4);
}

}  // namespace k3::kernels
