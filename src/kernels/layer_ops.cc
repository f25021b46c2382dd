// The layers' non-GEMM steps (layer_ops.h): plain loops over the SIMD primitives of ops.h.
#include "src/kernels/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "src/base/bf16.h"
#include "src/base/check.h"
#include "src/kernels/ops.h"

namespace k3::kernels {
namespace {

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

template <typename Index>
void Gather(const float* src, size_t width, const Index* rows, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * width, src + static_cast<size_t>(rows[i]) * width, sizeof(float) * width);
  }
}

}  // namespace

void AddRoundBf16(float* h, const float* a, size_t n) {
  for (size_t i = 0; i < n; ++i) h[i] = RoundBf16(h[i] + a[i]);
}

void SigmoidGateRoundBf16(float* o, const float* gate, size_t n) {
  for (size_t i = 0; i < n; ++i) o[i] = RoundBf16(o[i] * Sigmoid(gate[i]));
}

void SigmoidInPlace(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = Sigmoid(x[i]);
}

void GatherRows(const float* src, size_t width, const int32_t* rows, size_t n, float* dst) {
  Gather(src, width, rows, n, dst);
}

void GatherRows(const float* src, size_t width, const int64_t* rows, size_t n, float* dst) {
  Gather(src, width, rows, n, dst);
}

void ScatterRows(const float* src, size_t width, const int32_t* rows, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(dst + static_cast<size_t>(rows[i]) * width, src + i * width, sizeof(float) * width);
  }
}

void WeightedRowSum(const float* rows, const float* weights, size_t T, size_t k, size_t width, float* out) {
  std::fill(out, out + T * width, 0.0f);
  for (size_t t = 0; t < T; ++t) {
    for (size_t j = 0; j < k; ++j)
      Axpy(weights[t * k + j], rows + (t * k + j) * width, out + t * width, width);
  }
}

void RouteSigmoidTopK(const float* logits, size_t T, size_t E, const float* correction_bias, size_t top_k,
                      bool renormalize, float routed_scaling_factor, int32_t* experts, float* weights) {
  K3_CHECK(top_k >= 1 && top_k <= E);
  thread_local std::vector<float> score, selection;  // [E]
  thread_local std::vector<int32_t> order;           // [E]
  score.resize(E);
  selection.resize(E);
  order.resize(E);
  for (size_t t = 0; t < T; ++t) {
    for (size_t e = 0; e < E; ++e) {
      score[e] = Sigmoid(logits[t * E + e]);
      selection[e] = score[e] + correction_bias[e];
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top_k), order.end(),
                      [&](int32_t a, int32_t b) {
                        return selection[a] != selection[b] ? selection[a] > selection[b] : a < b;
                      });
    float sum = 0.0f;
    for (size_t k = 0; k < top_k; ++k) {
      experts[t * top_k + k] = order[k];
      weights[t * top_k + k] = score[order[k]];
      sum += score[order[k]];
    }
    for (size_t k = 0; k < top_k; ++k) {
      float& wk = weights[t * top_k + k];
      if (renormalize) wk /= (sum + 1e-20f);
      wk *= routed_scaling_factor;
    }
  }
}

void KdaDecayGate(float* g, const float* dt_bias, const float* a_exp, size_t T, size_t H, size_t K,
                  bool has_lower_bound, float lower_bound) {
  const size_t P = H * K;
  for (size_t t = 0; t < T; ++t) {
    for (size_t h = 0; h < H; ++h) {
      for (size_t d = 0; d < K; ++d) {
        float& gv = g[t * P + h * K + d];
        const float u = gv + dt_bias[h * K + d];
        gv = has_lower_bound ? lower_bound * Sigmoid(a_exp[h] * u) : -a_exp[h] * Softplus(u);
      }
    }
  }
}

void GatherHeadRows(const float* src, size_t stride, size_t offset, size_t n, size_t width, bool l2norm,
                    float scale, float* dst) {
  for (size_t i = 0; i < n; ++i) {
    const float* row = src + i * stride + offset;
    float* d = dst + i * width;
    float inv = 1.0f;
    if (l2norm) {
      float ss = 0.0f;
      for (size_t c = 0; c < width; ++c) ss += row[c] * row[c];
      inv = scale / std::sqrt(ss + 1e-6f);
    }
    for (size_t c = 0; c < width; ++c) d[c] = row[c] * inv;
  }
}

void ScatterHeadRows(const float* src, size_t n, size_t width, size_t stride, size_t offset, float* dst) {
  for (size_t i = 0; i < n; ++i)
    std::memcpy(dst + i * stride + offset, src + i * width, sizeof(float) * width);
}

void CopyRows(const float* src, size_t src_stride, float* dst, size_t dst_stride, size_t n, size_t width) {
  for (size_t i = 0; i < n; ++i)
    std::memcpy(dst + i * dst_stride, src + i * src_stride, sizeof(float) * width);
}

void StoreRows(const float* src, size_t width, float* const* rows, size_t n) {
  for (size_t i = 0; i < n; ++i) std::memcpy(rows[i], src + i * width, sizeof(float) * width);
}

void StoreRowsBf16(const float* src, size_t width, bf16* const* rows, size_t n) {
  for (size_t i = 0; i < n; ++i) F32ToBf16(src + i * width, width, rows[i]);
}

void RmsNormRows(const float* x, size_t rows, size_t n, size_t stride, const bf16* w, float eps, float* y) {
  for (size_t i = 0; i < rows; ++i) RmsNorm(x + i * stride, w, n, eps, y + i * stride);
}

void GatedRmsNormRows(const float* o, const float* gate, const float* w, size_t rows, size_t n, float eps,
                      float* y) {
  for (size_t i = 0; i < rows; ++i) GatedRmsNorm(o + i * n, gate + i * n, w, n, eps, y + i * n);
}

void scalar::CausalConvSilu(const float* raw, const float* taps, size_t W, size_t P, size_t rows, size_t c0,
                            size_t c1, float* tail, float* new_tail, float* out) {
  const int64_t taps_before = static_cast<int64_t>(W) - 1;
  const int64_t n = static_cast<int64_t>(rows);
  auto source = [&](int64_t i, size_t ch) {  // raw row i of the sequence (i < 0: from the tail)
    return i >= 0 ? raw[static_cast<size_t>(i) * P + ch]
                  : tail[static_cast<size_t>(taps_before + i) * P + ch];
  };
  for (size_t ch = c0; ch < c1; ++ch) {
    const float* tap = taps + ch * W;
    for (int64_t i = 0; i < n; ++i) {
      float c = 0.0f;
      for (size_t j = 0; j < W; ++j) c += tap[j] * source(i - taps_before + static_cast<int64_t>(j), ch);
      out[static_cast<size_t>(i) * P + ch] = RoundBf16(c * Sigmoid(c));
    }
    for (int64_t r = 0; r < taps_before; ++r) new_tail[r] = source(n - taps_before + r, ch);
    for (int64_t r = 0; r < taps_before; ++r) tail[static_cast<size_t>(r) * P + ch] = new_tail[r];
  }
}

void LatentAttentionQueries(const float* const* queries, size_t num_queries, const float* const* rows,
                            size_t visible, size_t width, size_t ctx_width, float scale, float* scores,
                            float* const* ctx, float* max, float* sum) {
  LatentScores(queries, num_queries, rows, visible, width, scale, scores);
  for (size_t g = 0; g < num_queries; ++g) {
    float* p = scores + g * visible;
    Softmax(p, visible, max == nullptr ? nullptr : max + g, sum == nullptr ? nullptr : sum + g);
    std::fill(ctx[g], ctx[g] + ctx_width, 0.0f);
    for (size_t j = 0; j < visible; ++j) Axpy(p[j], rows[j], ctx[g], ctx_width);
  }
}

void LatentAttention(const float* query, const float* const* rows, size_t visible, size_t width,
                     size_t ctx_width, float scale, float* scores, float* ctx, float* max, float* sum) {
  LatentAttentionQueries(&query, 1, rows, visible, width, ctx_width, scale, scores, &ctx, max, sum);
}

void LatentAttentionBf16(const float* query, const bf16* const* rows, size_t visible, size_t width,
                         size_t ctx_width, float scale, float* scores, float* ctx) {
  LatentScores(&query, 1, rows, visible, width, scale, scores);
  Softmax(scores, visible);
  std::fill(ctx, ctx + ctx_width, 0.0f);
  for (size_t j = 0; j < visible; ++j) AxpyBf16(scores[j], rows[j], ctx, ctx_width);
}

void CombineLatentChunks(const float* chunk_ctx, const float* max, const float* sum, size_t chunks,
                         size_t ctx_width, float* ctx) {
  const float largest = *std::max_element(max, max + chunks);
  float total = 0.0f;
  for (size_t c = 0; c < chunks; ++c) total += sum[c] * std::exp(max[c] - largest);
  std::fill(ctx, ctx + ctx_width, 0.0f);
  for (size_t c = 0; c < chunks; ++c)
    Axpy(sum[c] * std::exp(max[c] - largest) / total, chunk_ctx + c * ctx_width, ctx, ctx_width);
}

}  // namespace k3::kernels
