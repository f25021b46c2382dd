// The KDA (gated delta rule) core for one head, spec §2.3: the exact per-token recurrence and the
// chunked prefill form. Inputs are already prepared: q̂ and k̂ l2-normalised (q̂ also scaled by
// 1/sqrt(K)), v, the log-space decay g (< 0) and beta. All math fp32; the state S is updated in place.
//
// Shapes (one head, n tokens): q, k, g: [n, K]; v, o: [n, V]; beta: [n]; S: [K, V].
#pragma once

#include <cstdint>
#include <vector>

namespace k3::kernels {

inline constexpr int64_t kKdaChunk = 64;

// How a KDA layer advances over a multi-token chunk (single decode tokens always use the recurrence).
//  kRecurrent: the decode rule token by token (default). Bit-identical to decoding, so results never
//              depend on how a prompt is chunked or batched; ~4*H*K*V multiply-adds per token and layer,
//              under 2% of the layer's projection work at K3 size, with each head's [K, V] state hot in
//              L2 while it walks the chunk.
//  kChunked:   the matmul-shaped form of spec §2.3. Equal up to fp32 rounding order, which can flip a
//              later bf16 rounding; for accelerators and for checking the two forms against each other.
enum class KdaPrefillForm { kRecurrent, kChunked };  // C, the chunk length of the prefill form

// Per token: S[d,:] *= exp(g[d]); p = S^T k; S += beta k (v - p)^T; o = S^T q. SIMD across the V columns
// (kda_ops-inl.h, two passes over S per token); each element's operations are the reference's in the same
// order, with fused multiply-adds and hwy's exp, so the two agree to fp32 rounding noise.
void KdaRecurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                  int64_t n, int64_t K, int64_t V, float* S, float* o);
namespace scalar {
// The same as plain loops, three passes per token: the reference of kda_core_test.
void KdaRecurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                  int64_t n, int64_t K, int64_t V, float* S, float* o);
}  // namespace scalar

// Reusable buffers of the chunked form (grown on first use).
struct KdaChunkScratch {
  std::vector<float> G;        // [C, K] cumulative log decay within the chunk
  std::vector<float> A;        // [C, C] (I + L)^-1, then T = A diag(beta)
  std::vector<float> L;        // [C, C]
  std::vector<float> Wm;       // [C, K]  W = T (exp(G) ⊙ k̂)
  std::vector<float> Vn;       // [C, V]  U - W S
  std::vector<float> Aqk;      // [C, C]  q̂_i · k̂_j exp(G_i - G_j)
  std::vector<float> decayed;  // [C, K]  scratch row products
};

// Same result as KdaRecurrent up to fp32 rounding order, in chunks of kKdaChunk tokens (the last chunk
// may be shorter). Only differences G_i - G_j <= 0 are ever exponentiated.
void KdaChunked(const float* q, const float* k, const float* v, const float* g, const float* beta, int64_t n,
                int64_t K, int64_t V, float* S, float* o, KdaChunkScratch* scratch);

}  // namespace k3::kernels
