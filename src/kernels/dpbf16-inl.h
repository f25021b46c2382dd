// Shared pieces of the bf16 dot-product kernels (matmul_dpbf16.cc, mxfp4_dpbf16.cc): the target
// attribute, the lane sum and the tiling constants. Included only by those two files; everything here has
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

constexpr size_t kLanes = 16;           // fp32 lanes of one accumulator
constexpr size_t kUnblockedMaxM = 16;   // up to here: no K blocking (decode, small batches)
constexpr size_t kBlockElements = 512;  // elements of K per block when blocked (prefill)
constexpr size_t kBlockM = 64;          // x rows per block when blocked

// The sum of the 16 lanes in a fixed order (a pairwise tree). Through memory, once per output: the
// intrinsics that split a vector trip -Wmaybe-uninitialized inside g++ 12's header.
K3_DPBF16_TARGET inline float SumOfLanes(__m512 v) {
  alignas(64) float lanes[kLanes];
  _mm512_store_ps(lanes, v);
  for (size_t width = kLanes / 2; width > 0; width /= 2) {
    for (size_t i = 0; i < width; ++i) lanes[i] += lanes[i + width];
  }
  return lanes[0];
}

}  // namespace
}  // namespace k3::kernels::dpbf16
#else
#define K3_HAVE_DPBF16 0
#endif
