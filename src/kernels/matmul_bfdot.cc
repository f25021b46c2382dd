// The bf16 dot-product matmul of matmul_dpbf16.h on arm64: BFDOT (FEAT_BF16, Armv8.6; Neoverse V1/V2/N2,
// Graviton 3/4, the Grace CPUs of the guide's GB300 and A4X Max hosts) over bf16 weights, and the CPU
// feature checks there. On x86-64 matmul_dpbf16.cc holds both; elsewhere they say "not supported".
//
// Compiled with the baseline flags (Armv8.0): only the functions below carry the +bf16 target attribute,
// and MatMulGroup calls them only after Supported() (HWCAP2_BF16 from the kernel's auxiliary vector).
// MXFP4 weights take BFDOT too wherever bf16 ones do (mxfp4_bfdot.cc; Mxfp4Supported() is Supported()).
//
// Work of one call: as matmul_dpbf16.cc, in register tiles of up to kMaxTileM x rows by kTileN = 4 weight
// rows (16 accumulators of 4 fp32 lanes, 4 x vectors and a weight vector: 21 of the 32 NEON registers).
// Each BFDOT adds to lane l the products of elements 2l and 2l + 1 of a chunk of 8; a y[m, n] is one
// accumulator fed chunk by chunk in order of K, then its four lanes are summed as (l0 + l1) + (l2 + l3).
// No tile shape or M changes that sequence, so a row's result does not depend on the batch. It differs
// from the fp32 path in rounding order, and BFDOT (without FEAT_EBF16) also flushes subnormal inputs and
// results to zero and rounds its two-product sum to odd before the add: the same kind of difference as
// VDPBF16PS on x86, well inside the tolerance of the model's goldens (spec §2.0: activations are bf16
// already; the accumulation is fp32).
//
// Tested under qemu-user `-cpu max` (FEAT_BF16) by ops_test and the goldens (scripts/arm64_test.sh); no
// arm64 hardware was at hand to measure its speed.
#include "src/kernels/matmul_dpbf16.h"

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cstring>

#include "src/kernels/bfdot-inl.h"
#include "src/kernels/matmul_blocking.h"

namespace k3::kernels::dpbf16 {
namespace {

constexpr size_t kChunk = 8;     // bf16 elements of one 128-bit vector
constexpr size_t kMaxTileM = 4;  // x rows per register tile
constexpr size_t kTileN = 4;     // weight rows per register tile

struct BfdotTile {
  const uint16_t* x[kMaxTileM];  // x rows (zero-padded to whole kBf16Chunk chunks)
  float* y[kMaxTileM];           // &y[m, n0]
  const uint16_t* w[kTileN];     // weight rows; past N the last valid row repeats (not stored)
  size_t n_valid;                // 1..kTileN
};

K3_BFDOT_TARGET inline bfloat16x8_t LoadBf16(const uint16_t* p) {
  return vreinterpretq_bf16_u16(vld1q_u16(p));
}

// A kM x kTileN tile over the whole of K. The weights' partial last chunk (K % 8 != 0) is copied into a
// zero-padded vector, so nothing past a weight row is read; x is zero-padded already.
template <size_t kM>
K3_BFDOT_TARGET inline void RunTile(const BfdotTile& t, size_t K) {
  float32x4_t acc[kM][kTileN];
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kTileN; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  }
  const size_t full_chunks = K / kChunk;
  for (size_t c = 0; c < full_chunks; ++c) {
    bfloat16x8_t xv[kM];
    for (size_t i = 0; i < kM; ++i) xv[i] = LoadBf16(t.x[i] + c * kChunk);
    for (size_t j = 0; j < kTileN; ++j) {
      const bfloat16x8_t wv = LoadBf16(t.w[j] + c * kChunk);
      for (size_t i = 0; i < kM; ++i) acc[i][j] = vbfdotq_f32(acc[i][j], xv[i], wv);
    }
  }
  if (const size_t tail = K - full_chunks * kChunk; tail != 0) {
    const size_t c = full_chunks;
    for (size_t j = 0; j < kTileN; ++j) {
      uint16_t padded[kChunk] = {};
      std::memcpy(padded, t.w[j] + c * kChunk, tail * sizeof(uint16_t));
      const bfloat16x8_t wv = LoadBf16(padded);
      for (size_t i = 0; i < kM; ++i) acc[i][j] = vbfdotq_f32(acc[i][j], LoadBf16(t.x[i] + c * kChunk), wv);
    }
  }
  for (size_t i = 0; i < kM; ++i) StoreLaneSums(acc[i], t.n_valid, t.y[i]);
}

K3_BFDOT_TARGET void RowBlockTiles(const uint16_t* xs, size_t M, size_t x_stride, size_t K, const uint16_t* W,
                                   float* y, size_t N, size_t n_begin, size_t n_end) {
  const size_t rows_per_m_block = XRowsPerBlock(M, x_stride * sizeof(uint16_t));
  const size_t n_tiles = (n_end - n_begin + kTileN - 1) / kTileN;
  for (size_t m_block = 0; m_block < M; m_block += rows_per_m_block) {
    const size_t m_block_end = std::min(M, m_block + rows_per_m_block);
    for (size_t nt = 0; nt < n_tiles; ++nt) {
      const size_t n0 = n_begin + nt * kTileN;
      BfdotTile t;
      t.n_valid = std::min(kTileN, n_end - n0);
      for (size_t j = 0; j < kTileN; ++j) t.w[j] = W + (n0 + std::min(j, t.n_valid - 1)) * K;
      for (size_t m0 = m_block; m0 < m_block_end; m0 += kMaxTileM) {
        const size_t rows = std::min(kMaxTileM, m_block_end - m0);
        for (size_t i = 0; i < rows; ++i) {
          t.x[i] = xs + (m0 + i) * x_stride;
          t.y[i] = y + (m0 + i) * N + n0;
        }
        switch (rows) {
          case 1:
            RunTile<1>(t, K);
            break;
          case 2:
            RunTile<2>(t, K);
            break;
          case 3:
            RunTile<3>(t, K);
            break;
          default:
            RunTile<4>(t, K);
            break;
        }
      }
    }
  }
}

}  // namespace

bool Supported() {
  static const bool supported = (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0;
  return supported;
}

bool Mxfp4Supported() { return Supported(); }

void RowBlock(const uint16_t* xs, size_t M, size_t x_stride, size_t K, const uint16_t* W, float* y, size_t N,
              size_t n_begin, size_t n_end) {
  if (M == 0 || n_begin >= n_end) return;
  RowBlockTiles(xs, M, x_stride, K, W, y, N, n_begin, n_end);
}

}  // namespace k3::kernels::dpbf16

#endif  // __aarch64__
