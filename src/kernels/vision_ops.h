// The MoonViT vision tower's steps that are not GEMMs (vision.md §3): the bilinear resize of the learned
// position grid, the 2-D rotary embedding, the two GELUs and the bidirectional attention of one image's
// patches. Raw pointers and sizes in, like ops.h; activations are fp32 arrays holding bf16 values where
// the reference rounds. Element-wise functions are plain loops (their definition); the attention is built
// on MatMulBf16 and Softmax (ops.h) and has a plain-loop reference, scalar::BidirectionalAttention.
#pragma once

#include <cstddef>

#include "src/base/thread_pool.h"

namespace k3::kernels {

// dst [out_h, out_w, C] = src [in_h, in_w, C] resized as PyTorch's F.interpolate(mode="bilinear",
// align_corners=False, antialias=False) resizes (also when shrinking): for output row y the source row
// is s = max(0, (y + 0.5) * in_h / out_h - 0.5), rows floor(s) and floor(s) + 1 (clamped) weighted
// 1 - frac(s) and frac(s); columns likewise; fp32 math, the row pair blended last. Not rounded.
void ResizeBilinear(const float* src, size_t in_h, size_t in_w, size_t C, size_t out_h, size_t out_w,
                    float* dst);

// 2-D RoPE tables for the `grid_h * grid_w` tokens of one image in raster order, D = head size (D % 4
// == 0): for i < D/4 and f_i = 1 / theta^(4i / D) (fp32), pair 2i of token (row r, column c) turns by
// the angle c * f_i and pair 2i+1 by r * f_i. cos, sin: [grid_h * grid_w, D/2], fp32.
void Rope2DTables(size_t grid_h, size_t grid_w, size_t D, float theta, float* cos, float* sin);
// Rotates `heads` heads of D values in each of `T` rows (row t at x + t * stride) by the tables above,
// interleaved pairs (x[2j], x[2j+1]) -> (x0 cos - x1 sin, x1 cos + x0 sin) in fp32, rounded to bf16.
void ApplyRope2DRoundBf16(float* x, size_t T, size_t stride, size_t heads, size_t D, const float* cos,
                          const float* sin);

// x[i] = bf16(0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) (PyTorch gelu, approximate="tanh").
void GeluTanhRoundBf16(float* x, size_t n);
// x[i] = bf16(0.5 x (1 + erf(x / sqrt(2)))) (PyTorch's exact gelu).
void GeluErfRoundBf16(float* x, size_t n);

// Bidirectional multi-head attention over the T tokens of one image. qkv: [T, 3 * H * D], each row the
// H query heads, then the H key heads, then the H value heads (D values each). out: [T, H * D] with
// out[t, h] = sum_j p_j v_h[j], p = softmax_j((q_h[t] . k_h[j]) * scale), fp32, not rounded. The keys
// and values must hold bf16 values (they are kept as bf16 for MatMulBf16; the queries and p stay fp32).
// Threaded over (head, block of queries); allocates its working memory (K and V^T per head, scores).
void BidirectionalAttention(const float* qkv, size_t T, size_t H, size_t D, float scale, float* out,
                            ThreadPool* pool);

namespace scalar {
// The plain loops (double-free fp32, one query at a time): the reference of vision_ops_test.
void BidirectionalAttention(const float* qkv, size_t T, size_t H, size_t D, float scale, float* out);
}  // namespace scalar

}  // namespace k3::kernels
