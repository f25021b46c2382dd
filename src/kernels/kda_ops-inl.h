// Highway bodies of the KDA layer's per-token kernels (kda_core.h, layer_ops.h): the delta-rule recurrence
// of one head and the short causal conv + SiLU. Compiled once per SIMD target by ops.cc (after ops-inl.h,
// whose building blocks they use). Vectors run across the value columns (recurrence) or the channels
// (conv), so each output element sees the same operations in the same order as the scalar references
// (kernels::scalar::KdaRecurrent, scalar::CausalConvSilu), except that products are fused into their sums
// and exp is hwy's (1-2 ulp): results agree to fp32 rounding noise. Whole vectors and the single-lane
// remainder run the same instructions, so a column's result does not depend on where a task's range
// starts.

#if defined(K3_KERNELS_KDA_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef K3_KERNELS_KDA_OPS_INL_H_
#undef K3_KERNELS_KDA_OPS_INL_H_
#else
#define K3_KERNELS_KDA_OPS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace k3::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One head over n tokens; S [K, V] in place. Per token: decay[d] = exp(g[d]); pass 1 over the rows of S:
// row_d *= decay[d], p += k[d] row_d; u = beta (v - p); pass 2: row_d += k[d] u, o += q[d] row_d (the
// read of the updated state rides on the write). decay [K] and u [V] are scratch.
void KdaRecurrentImpl(const float* q, const float* k, const float* v, const float* g, const float* beta,
                      size_t n, size_t K, size_t V, float* S, float* o, float* decay, float* u) {
  for (size_t t = 0; t < n; ++t) {
    const float* q_t = q + t * K;
    const float* k_t = k + t * K;
    const float* v_t = v + t * V;
    const float* g_t = g + t * K;
    float* o_t = o + t * V;
    ForEachVector(
        K, [&](auto d, size_t i) HWY_ATTR { hn::StoreU(hn::Exp(d, hn::LoadU(d, g_t + i)), d, decay + i); });
    std::fill(u, u + V, 0.0f);
    for (size_t row_index = 0; row_index < K; ++row_index) {
      float* row = S + row_index * V;
      const float row_decay = decay[row_index], key = k_t[row_index];
      ForEachVector(V, [&](auto d, size_t c) HWY_ATTR {
        const auto decayed = hn::Mul(hn::LoadU(d, row + c), hn::Set(d, row_decay));
        hn::StoreU(decayed, d, row + c);
        hn::StoreU(hn::MulAdd(decayed, hn::Set(d, key), hn::LoadU(d, u + c)), d, u + c);
      });
    }
    const float beta_t = beta[t];
    ForEachVector(V, [&](auto d, size_t c) HWY_ATTR {
      hn::StoreU(hn::Mul(hn::Set(d, beta_t), hn::Sub(hn::LoadU(d, v_t + c), hn::LoadU(d, u + c))), d, u + c);
    });
    std::fill(o_t, o_t + V, 0.0f);
    for (size_t row_index = 0; row_index < K; ++row_index) {
      float* row = S + row_index * V;
      const float key = k_t[row_index], query = q_t[row_index];
      ForEachVector(V, [&](auto d, size_t c) HWY_ATTR {
        const auto written = hn::MulAdd(hn::Set(d, key), hn::LoadU(d, u + c), hn::LoadU(d, row + c));
        hn::StoreU(written, d, row + c);
        hn::StoreU(hn::MulAdd(written, hn::Set(d, query), hn::LoadU(d, o_t + c)), d, o_t + c);
      });
    }
  }
}

// Channels [c0, c1) of one sequence's rows (layer_ops.h CausalConvSilu): taps_by_offset [W, c1 - c0] is
// scratch for the taps transposed so that a vector of channels loads each tap with one load.
void CausalConvSiluImpl(const float* raw, const float* taps, size_t W, size_t P, size_t rows, size_t c0,
                        size_t c1, float* tail, float* taps_by_offset, float* out) {
  const size_t C = c1 - c0;
  for (size_t ch = c0; ch < c1; ++ch) {
    for (size_t j = 0; j < W; ++j) taps_by_offset[j * C + (ch - c0)] = taps[ch * W + j];
  }
  const int64_t taps_before = static_cast<int64_t>(W) - 1;
  auto source_row = [&](int64_t i) {  // raw row i of the sequence (i < 0: from the tail)
    return i >= 0 ? raw + static_cast<size_t>(i) * P : tail + static_cast<size_t>(taps_before + i) * P;
  };
  for (size_t i = 0; i < rows; ++i) {
    const int64_t first = static_cast<int64_t>(i) - taps_before;
    float* out_row = out + i * P + c0;
    ForEachVector(C, [&](auto d, size_t c) HWY_ATTR {
      auto sum = hn::Zero(d);
      for (size_t j = 0; j < W; ++j) {
        const float* src = source_row(first + static_cast<int64_t>(j)) + c0 + c;
        sum = hn::MulAdd(hn::LoadU(d, taps_by_offset + j * C + c), hn::LoadU(d, src), sum);
      }
      hn::StoreU(RoundBf16(d, hn::Mul(sum, Sigmoid(d, sum))), d, out_row + c);
    });
  }
  // The tail keeps the last W-1 raw rows. Row r reads source row rows - (W-1) + r, which lies in the raw rows
  // or at tail row rows + r >= r: never a tail row this loop has already overwritten.
  for (int64_t r = 0; r < taps_before; ++r) {
    const float* src = source_row(static_cast<int64_t>(rows) - taps_before + r) + c0;
    float* dst = tail + static_cast<size_t>(r) * P + c0;
    if (src != dst) std::memmove(dst, src, C * sizeof(float));
  }
}

}  // namespace k3::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // K3_KERNELS_KDA_OPS_INL_H_
