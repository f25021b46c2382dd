// Shared pieces of the bf16 dot-product kernels (matmul_dpbf16.cc, mxfp4_dpbf16.cc): the target
// attribute and the lane sums. Included only by those two files; everything here has
// internal linkage, so no AVX-512 code can leak into another translation unit.
#pragma once

#include <cstddef>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "src/kernels/lane_sums_avx512-inl.h"
#define K3_HAVE_DPBF16 1
#define K3_DPBF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
// The MXFP4 kernel also permutes bytes (AVX512_VBMI).
#define K3_DPBF16_VBMI_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi")))

namespace k3::kernels::dpbf16 {
namespace {

// y[0, n) = the lane sums of acc[0, n) (n <= 4, the outputs of one x row in a tile), each in one fixed
// pairwise tree (SumsOfLanes4, lane_sums_avx512-inl.h), the four accumulators side by side in vectors.
K3_DPBF16_TARGET inline void StoreSumsOfLanes4(const __m512 (&acc)[4], size_t n, float* y) {
  const __m512 sums = _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), SumsOfLanes4(acc));
  _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n) - 1), sums);
}

}  // namespace
}  // namespace k3::kernels::dpbf16
#else
#define K3_HAVE_DPBF16 0
#endif
