// The vision tower's non-GEMM steps (vision_ops.h).
#include "src/kernels/vision_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "src/base/bf16.h"
#include "src/kernels/ops.h"

namespace k3::kernels {
namespace {

// Query rows per attention task: each task streams its head's K and V^T once, so larger blocks read them
// fewer times; scores [kQueryBlock, T] are 2.8 MB at T = 5476 (a 1024 x 1024 image).
constexpr size_t kQueryBlock = 128;

// PyTorch's area_pixel_compute_source_index (align_corners=False, linear): the source coordinate of
// output index `i` and its two neighbours and weights.
struct Tap {
  size_t i0, i1;
  float w0, w1;
};
Tap SourceTap(size_t i, size_t in, size_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  float s = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
  if (s < 0.0f) s = 0.0f;
  const size_t i0 = std::min(static_cast<size_t>(s), in - 1);
  const float w1 = s - static_cast<float>(i0);
  return Tap{i0, i0 + 1 < in ? i0 + 1 : i0, 1.0f - w1, w1};
}

}  // namespace

void ResizeBilinear(const float* src, size_t in_h, size_t in_w, size_t C, size_t out_h, size_t out_w,
                    float* dst) {
  for (size_t y = 0; y < out_h; ++y) {
    const Tap ty = SourceTap(y, in_h, out_h);
    for (size_t x = 0; x < out_w; ++x) {
      const Tap tx = SourceTap(x, in_w, out_w);
      const float* a = src + (ty.i0 * in_w + tx.i0) * C;
      const float* b = src + (ty.i0 * in_w + tx.i1) * C;
      const float* c = src + (ty.i1 * in_w + tx.i0) * C;
      const float* d = src + (ty.i1 * in_w + tx.i1) * C;
      float* o = dst + (y * out_w + x) * C;
      for (size_t ch = 0; ch < C; ++ch) {
        o[ch] = ty.w0 * (tx.w0 * a[ch] + tx.w1 * b[ch]) + ty.w1 * (tx.w0 * c[ch] + tx.w1 * d[ch]);
      }
    }
  }
}

void Rope2DTables(size_t grid_h, size_t grid_w, size_t D, float theta, float* cos, float* sin) {
  const size_t quarter = D / 4, half = D / 2;
  std::vector<float> freqs(quarter);
  for (size_t i = 0; i < quarter; ++i) {
    freqs[i] = 1.0f / std::pow(theta, static_cast<float>(4 * i) / static_cast<float>(D));
  }
  for (size_t r = 0; r < grid_h; ++r) {
    for (size_t c = 0; c < grid_w; ++c) {
      const size_t t = r * grid_w + c;
      for (size_t i = 0; i < quarter; ++i) {
        const float ax = static_cast<float>(c) * freqs[i];
        const float ay = static_cast<float>(r) * freqs[i];
        cos[t * half + 2 * i] = std::cos(ax);
        sin[t * half + 2 * i] = std::sin(ax);
        cos[t * half + 2 * i + 1] = std::cos(ay);
        sin[t * half + 2 * i + 1] = std::sin(ay);
      }
    }
  }
}

void ApplyRope2DRoundBf16(float* x, size_t T, size_t stride, size_t heads, size_t D, const float* cos,
                          const float* sin) {
  const size_t half = D / 2;
  for (size_t t = 0; t < T; ++t) {
    const float* ct = cos + t * half;
    const float* st = sin + t * half;
    for (size_t h = 0; h < heads; ++h) {
      float* v = x + t * stride + h * D;
      for (size_t j = 0; j < half; ++j) {
        const float x0 = v[2 * j], x1 = v[2 * j + 1];
        v[2 * j] = RoundBf16(x0 * ct[j] - x1 * st[j]);
        v[2 * j + 1] = RoundBf16(x1 * ct[j] + x0 * st[j]);
      }
    }
  }
}

void GeluTanhRoundBf16(float* x, size_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = RoundBf16(0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v))));
  }
}

void GeluErfRoundBf16(float* x, size_t n) {
  constexpr float kInvSqrt2 = 0.7071067811865476f;
  for (size_t i = 0; i < n; ++i) x[i] = RoundBf16(0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2)));
}

void BidirectionalAttention(const float* qkv, size_t T, size_t H, size_t D, float scale, float* out,
                            ThreadPool* pool) {
  if (T == 0 || H == 0 || D == 0) return;
  const size_t row = 3 * H * D;
  // Per head: K [T, D] (the "weights" of the scores' matmul) and V^T [D, T] (of the context's), stored as
  // bf16: the tower's keys and values hold bf16 values, so this is exact and halves what the matmuls
  // stream (MatMulBf16 takes bf16 weights).
  std::vector<bf16> keys(H * T * D), values_t(H * D * T);
  auto layout = [&](size_t h, size_t) {
    bf16* k = keys.data() + h * T * D;
    bf16* vt = values_t.data() + h * D * T;
    for (size_t t = 0; t < T; ++t) {
      const float* src = qkv + t * row;
      for (size_t d = 0; d < D; ++d) k[t * D + d] = FloatToBf16(src[(H + h) * D + d]);
      for (size_t d = 0; d < D; ++d) vt[d * T + t] = FloatToBf16(src[(2 * H + h) * D + d]);
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(H, layout);
  } else {
    for (size_t h = 0; h < H; ++h) layout(h, 0);
  }
  const size_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  auto task = [&](size_t index, size_t) {
    const size_t h = index / blocks, first = (index % blocks) * kQueryBlock;
    const size_t rows = std::min(kQueryBlock, T - first);
    std::vector<float> q(rows * D), scores(rows * T), ctx(rows * D);
    for (size_t i = 0; i < rows; ++i)
      std::memcpy(&q[i * D], qkv + (first + i) * row + h * D, D * sizeof(float));
    MatMulBf16(q.data(), rows, D, keys.data() + h * T * D, T, scores.data(), nullptr);
    for (size_t i = 0; i < rows; ++i) {
      float* s = &scores[i * T];
      for (size_t j = 0; j < T; ++j) s[j] *= scale;
      Softmax(s, T);
    }
    MatMulBf16(scores.data(), rows, T, values_t.data() + h * D * T, D, ctx.data(), nullptr);
    for (size_t i = 0; i < rows; ++i) {
      std::memcpy(out + (first + i) * H * D + h * D, &ctx[i * D], D * sizeof(float));
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(H * blocks, task);
  } else {
    for (size_t i = 0; i < H * blocks; ++i) task(i, 0);
  }
}

namespace scalar {

void BidirectionalAttention(const float* qkv, size_t T, size_t H, size_t D, float scale, float* out) {
  const size_t row = 3 * H * D;
  std::vector<float> p(T);
  for (size_t h = 0; h < H; ++h) {
    for (size_t t = 0; t < T; ++t) {
      const float* q = qkv + t * row + h * D;
      float mx = -INFINITY;
      for (size_t j = 0; j < T; ++j) {
        const float* k = qkv + j * row + (H + h) * D;
        float dot = 0.0f;
        for (size_t d = 0; d < D; ++d) dot += q[d] * k[d];
        p[j] = dot * scale;
        mx = std::max(mx, p[j]);
      }
      float sum = 0.0f;
      for (size_t j = 0; j < T; ++j) {
        p[j] = std::exp(p[j] - mx);
        sum += p[j];
      }
      float* o = out + t * H * D + h * D;
      for (size_t d = 0; d < D; ++d) o[d] = 0.0f;
      for (size_t j = 0; j < T; ++j) {
        const float* v = qkv + j * row + (2 * H + h) * D;
        const float w = p[j] / sum;
        for (size_t d = 0; d < D; ++d) o[d] += w * v[d];
      }
    }
  }
}

}  // namespace scalar
}  // namespace k3::kernels
