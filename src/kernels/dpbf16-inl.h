// Shared pieces of the bf16 dot-product kernels (matmul_dpbf16.cc, mxfp4_dpbf16.cc): the target
// attribute and the lane sums. Included only by those two files; everything here has
// internal linkage, so no AVX-512 code can leak into another translation unit.
#pragma once

#include <cstddef>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define K3_HAVE_DPBF16 1
#define K3_DPBF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
// The MXFP4 kernel also permutes bytes (AVX512_VBMI).
#define K3_DPBF16_VBMI_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi")))

namespace k3::kernels::dpbf16 {
namespace {

// y[0, n) = the lane sums of acc[0, n) (n <= 4, the outputs of one x row in a tile), each in one fixed
// pairwise tree (lane i += lane i + w for w = 8, 4, 2, 1), the four accumulators side by side in vectors.
K3_DPBF16_TARGET inline void StoreSumsOfLanes4(const __m512 (&acc)[4], size_t n, float* y) {
  // Width 8: lanes i and i + 8. ab = [a'0..7, b'0..7], cd likewise.
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // Width 4: lanes i and i + 4 of each; 128-bit lane g now holds accumulator g's four partial sums.
  const __m512 fours = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  // Width 2 (lanes i and i + 2), then width 1: lane 4 g holds accumulator g's sum.
  const __m512 twos = _mm512_add_ps(fours, _mm512_permute_ps(fours, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 ones = _mm512_add_ps(twos, _mm512_permute_ps(twos, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512 sums =
      _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ones);
  _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n) - 1), sums);
}

}  // namespace
}  // namespace k3::kernels::dpbf16
#else
#define K3_HAVE_DPBF16 0
#endif
