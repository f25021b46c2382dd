// Matmuls on the CPU's bf16 dot-product instruction (VDPBF16PS, x86 AVX512_BF16; BFDOT on arm64 with
// FEAT_BF16, matmul_bfdot.cc and mxfp4_bfdot.cc), used by MatMulGroup
// (matmul-inl.h) for the rows of x that hold bf16 values, which is nearly every activation of the model
// (rounded to bf16 where the reference rounds, spec §2.0): bf16 weights (matmul_dpbf16.cc) and, where
// the CPU also has AVX512_VBMI for byte permutes (x86-64) or on any arm64 CPU with BFDOT, MXFP4 weights
// (mxfp4_dpbf16.cc, mxfp4_bfdot.cc).
//
// Why: the fp32 path (matmul-inl.h) widens every weight to fp32 and spends an FMA per 16 products; here
// one instruction takes 32 bf16 pairs, so decode keeps more memory reads in flight per core and prefill
// does fewer operations. Paired decode runs on mini-k3 were 1.17x faster with the bf16 kernel alone
// (docs/architecture.md).
//
// Numerics: each lane of a 16-lane fp32 accumulator adds the exact products of element pairs (bf16 x bf16
// and bf16 x E2M1 fit fp32), chunk by chunk in order of K, and the lanes are summed in a fixed order.
// Every tile shape and M follows the same sequence, so a row's result does not depend on the batch. It
// differs from the fp32 path in rounding order only (and flushes subnormal inputs to zero, as the
// instruction does).
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::kernels::dpbf16 {

// Whether this CPU has the instruction: x86-64 AVX512_BF16 with the OS saving its registers, or arm64
// FEAT_BF16 (HWCAP2_BF16). False in other builds.
bool Supported();
// Whether the MXFP4 kernel can run here: Supported() and, on x86-64, AVX512_VBMI.
bool Mxfp4Supported();

// ---- bf16 weights ------------------------------------------------------------------------------------
// x in bf16, rows zero-padded to a multiple of kBf16Chunk elements.
inline constexpr size_t kBf16Chunk = 32;
// y[m, n] for m in [0, M), n in [n_begin, n_end): xs [M, x_stride] bf16 bit patterns (x_stride >= K
// rounded up to kBf16Chunk), W [N, K] bf16 row-major, y [M, N]. Only where Supported().
void RowBlock(const uint16_t* xs, size_t M, size_t x_stride, size_t K, const uint16_t* W, float* y, size_t N,
              size_t n_begin, size_t n_end);

// ---- MXFP4 weights (spec §3.3) ---------------------------------------------------------------------
// K is taken in blocks of 4 scale groups (128 elements, 64 packed bytes); x is re-laid out to match.
inline constexpr size_t kMxfp4Block = 128;
// Writes the top halves (the bf16 patterns) of x [M, K] into xs [M, x_stride] in the block layout,
// zero-padded to whole blocks (x_stride >= K rounded up to kMxfp4Block). K % 32 == 0.
void LayOutMxfp4Input(const float* x, size_t M, size_t K, uint16_t* xs, size_t x_stride);
// y[m, n] for m in [0, M), n in [n_begin, n_end): packed [N, K/2], scales [N, K/32]. Only where
// Mxfp4Supported().
void Mxfp4RowBlock(const uint16_t* xs, size_t M, size_t x_stride, size_t K, const uint8_t* packed,
                   const uint8_t* scales, float* y, size_t N, size_t n_begin, size_t n_end);

}  // namespace k3::kernels::dpbf16
