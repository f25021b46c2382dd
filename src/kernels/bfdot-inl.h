// What the arm64 BFDOT kernels (matmul_bfdot.cc: bf16 weights; mxfp4_bfdot.cc: MXFP4 weights) share: the
// target attribute their functions carry (the files are compiled for baseline Armv8.0) and the lane sum
// that ends every output. Included only by those two files, and only on arm64 with GCC or Clang.
#pragma once

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>

#include <cstddef>
#include <cstring>

#define K3_BFDOT_TARGET __attribute__((target("arch=armv8.2-a+bf16")))

namespace k3::kernels::dpbf16 {

// y[0, n) of one x row from its 4 accumulators (one a weight row of the tile): each one's lanes summed as
// (l0 + l1) + (l2 + l3). n <= 4.
K3_BFDOT_TARGET inline void StoreLaneSums(const float32x4_t (&acc)[4], size_t n, float* y) {
  const float32x4_t sums = vpaddq_f32(vpaddq_f32(acc[0], acc[1]), vpaddq_f32(acc[2], acc[3]));
  if (n == 4) {
    vst1q_f32(y, sums);
  } else {
    float lanes[4];
    vst1q_f32(lanes, sums);
    std::memcpy(y, lanes, n * sizeof(float));
  }
}

}  // namespace k3::kernels::dpbf16

#endif  // __aarch64__
