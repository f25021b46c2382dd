// The lane sums of four AVX-512 fp32 vectors side by side, shared by the bf16 dot-product matmuls
// (dpbf16-inl.h) and the latent attention's score pass on Highway's AVX-512 targets (ops-inl.h). Each sum
// is built in one fixed pairwise tree, lane i += lane i + w for w = 8, 4, 2, 1: the tree of
// _mm512_reduce_add_ps, which Highway's SumOfLanes is on AVX-512, so a sum has SumOfLanes' bits.
// Internal linkage and an AVX-512F target attribute: callable only from AVX-512 code, never emitted for
// another target.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace k3::kernels {
namespace {

// GCC 12 flags the _mm512_undefined_ps() inside the shuffle intrinsics as maybe used uninitialised when
// this is inlined into Highway's target regions (GCC bug 105593, fixed in GCC 13).
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
// Lane 4 g of the result holds the sum of v[g]'s 16 lanes (g < 4).
__attribute__((target("avx512f"), always_inline)) inline __m512 SumsOfLanes4(const __m512 (&v)[4]) {
  // Width 8: lanes i and i + 8. ab = [a'0..7, b'0..7], cd likewise.
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // Width 4: lanes i and i + 4 of each; 128-bit lane g now holds v[g]'s four partial sums.
  const __m512 fours = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  // Width 2 (lanes i and i + 2), then width 1.
  const __m512 twos = _mm512_add_ps(fours, _mm512_permute_ps(fours, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm512_add_ps(twos, _mm512_permute_ps(twos, _MM_SHUFFLE(2, 3, 0, 1)));
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace
}  // namespace k3::kernels
#endif
