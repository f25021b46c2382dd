// MXFP4 x int8 matmuls: the "fast" numerics of MXFP4 expert matmuls (issue 43). Activations are quantised
// per 32-value group (one MXFP4 scale group) to int8 with an fp32 scale, llama.cpp's Q8_0 scheme, and each
// group's dot product with the E2M1 codes is an exact integer.
//
// Definition (scalar:: below; every kernel gives its results bit for bit):
//   Quantisation of a group x[0, 32): amax = max |x|; d = amax / 127, q = round(x * (127 / amax)), rounded
//   to nearest even (as llama.cpp's x86 kernels; its scalar reference rounds halves away from zero) and
//   clamped to [-127, 127]. A group with amax < 2^-100 (zeros, denormals: 127 / amax would overflow) gets
//   d = 0 and q = 0. NaN inputs quantise to 0 (inputs are meant to be finite).
//   Weights: the E2M1 code c is the integer w = 2 E2M1(c) in {0, +-1, +-2, +-3, +-4, +-6, +-8, +-12}, and
//   the group's E8M0 scale byte s gives h = E8M0(s) / 2 = 2^(s - 128) (s = 255: inf, as E8M0ToFloat).
//   Output: y[m, n] = sum over groups g in order of K of float(dot_g) * (d[m, g] * h[n, g]), where dot_g =
//   sum_k q[m, k] w[n, k] is an exact int32 (|dot| <= 32 * 127 * 12). Each step is one fp32 multiply for
//   the factor, one for the term and one add (no fused multiply-add), starting from +0.
// Every kernel computes each group's dot exactly before it meets the floats and keeps y[m, n] in its own
// fp32 lane, so results are bit-identical to the definition on every target and for any M, tile shape or
// thread count (batch invariance, ops.h).
//
// Q8 layout of activations [M, K] (K % 32 == 0): values [M, K] int8 and scales [M, K / 32] fp32. Within
// group g of a row, slot s < 16 holds element 32 g + 2 s and slot 16 + s element 32 g + 2 s + 1: the even
// elements, then the odd ones, the order in which a group's 16 packed MXFP4 bytes give their low and their
// high nibbles (spec §3.3: low nibble = even column).
//
// Kernels, chosen at run time (Q8 kernel variants below): x86-64 AVX2 (VPMADDUBSW + VPMADDWD with the
// sign trick), AVX-VNNI and AVX512-VNNI (VPDPBUSD, 256-bit), arm64 NEON (SMULL/SMLAL), NEON dotprod (SDOT)
// and I8MM (SMMLA, 2 x rows by 2 weight rows per instruction); the scalar definition elsewhere. The
// quantiser runs on AVX2 with the x86 variants and on NEON with the arm64 ones (the same bits).
// Highway 1.0.3 (Debian's) has no int8 dot product (no SumOfMulQuadAccumulate; ReorderWidenMulAccumulate
// takes int16), and its AVX3 target does not imply VNNI, so the variants are intrinsics with their own CPU
// checks, as matmul_dpbf16.h's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/base/thread_pool.h"

namespace k3::kernels {

inline constexpr size_t kQ8Group = 32;  // values per quantisation group (= one MXFP4 scale group)

// x [M, K] fp32 -> values [M, K] int8 and scales [M, K / 32] fp32 in the Q8 layout. K % 32 == 0.
void QuantizeRowsQ8(const float* x, size_t M, size_t K, int8_t* values, float* scales);

// y[M, N] = x[M, K] * W^T for Q8 activations (values [M, K], scales [M, K / 32]) and MXFP4 weights W as in
// MatMulMxfp4 (packed [N, K / 2], low nibble = even column; scales [N, K / 32] E8M0). K % 32 == 0.
void MatMulMxfp4Q8(const int8_t* x_values, const float* x_scales, size_t M, size_t K, const uint8_t* packed,
                   const uint8_t* scales, size_t N, float* y, ThreadPool* pool);

namespace q8 {

// The kernel variants; which ones this CPU runs is decided at run time.
enum class Kernel : uint8_t { kScalar, kNeon, kNeonDot, kI8mm, kAvx2, kAvxVnni, kAvx512Vnni };
const char* KernelName(Kernel kernel);
// The variants compiled in that this CPU supports, the scalar definition first, the preferred one last.
std::vector<Kernel> SupportedKernels();
// The variant the matmuls use: the last of SupportedKernels() unless a test chose another.
Kernel ActiveKernel();
// Tests: make `kernel` (one of SupportedKernels()) the active one process-wide. Not while a matmul runs.
void SetKernelForTest(Kernel kernel);

// One pool task's work: y[m, n] for m in [0, M), n in [n_begin, n_end). other_begin / other_bytes: another
// task's weights to pull into L2 on the way (matmul_overlap.h), or nullptr / 0.
struct RowBlockArgs {
  const int8_t* x_values;  // [M, K], Q8 layout
  const float* x_scales;   // [M, K / 32]
  size_t M, K;
  const uint8_t* packed;  // [N, K / 2]
  const uint8_t* scales;  // [N, K / 32]
  float* y;               // [M, N]
  size_t N, n_begin, n_end;
  const char* other_begin = nullptr;
  size_t other_bytes = 0;
};
// Runs ActiveKernel() on one row block (MatMulGroup's tasks of WeightKind::kMxfp4Q8 jobs).
void RowBlock(const RowBlockArgs& args);

}  // namespace q8

namespace scalar {
void QuantizeRowsQ8(const float* x, size_t M, size_t K, int8_t* values, float* scales);
// The exact dot product of one group: 32 Q8 values (Q8 layout) with 16 packed MXFP4 bytes (x2 integers).
int32_t Mxfp4Q8GroupDot(const int8_t* x_values, const uint8_t* packed);
void MatMulMxfp4Q8(const int8_t* x_values, const float* x_scales, size_t M, size_t K, const uint8_t* packed,
                   const uint8_t* scales, size_t N, float* y);
}  // namespace scalar

}  // namespace k3::kernels
