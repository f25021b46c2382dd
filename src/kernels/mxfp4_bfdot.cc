// BFDOT matmul over MXFP4 weights on arm64 (matmul_dpbf16.h, spec §3.3): the rows of x that hold bf16
// values (nearly every activation; MatMulGroup sorts them) against E2M1 weights with E8M0 group scales,
// where the CPU has FEAT_BF16 (Neoverse V1/V2/N2, Graviton 3/4, Grace). Compiled with the baseline flags;
// only the functions below carry the +bf16 target attribute, and MatMulGroup calls them only after
// Mxfp4Supported() (matmul_bfdot.cc). The x86-64 counterpart is mxfp4_dpbf16.cc.
//
// Decode: one scale group (32 elements) is 16 packed bytes, one load. A mask and a shift give the even
// elements' codes (low nibbles) and the odd ones' (high nibbles); two byte lookups (TBL) of each in tables
// of the low and the high bytes of the 16 E2M1 values' bf16 patterns (exact: E2M1 values are bf16), and
// two interleaves (ZIP1, ZIP2) of those bytes, give the group as four bf16 vectors: 10 instructions for 32
// weights. Vector q, word w holds element 2 (8 (q % 2) + w) + q / 2 (evens in vectors 0-1, odds in 2-3);
// LayOutMxfp4Input lays x out the same way. The four BFDOTs of a group go into a temporary, and one FMA
// applies the group's scale: acc += (x . w over the group) * 2^(s - 127).
//
// Tiles: up to kMaxTileM x rows by kTileN = 4 weight rows over the whole of K (8 accumulators, 8 x
// vectors, 4 weight vectors, the tables and the decode's temporaries: at 2 x rows g++ 12 keeps a few
// accumulators in L1); blocks of x rows as the other kernels (matmul_blocking.h). Decode-sized calls (up
// to kPrefetchMaxM x rows) prefetch the weight rows a prefetch distance ahead, group by group, as the fp32
// path does: a tile's rows are short streams. From kPanelMinM x rows a weight tile is decoded once into a
// per-thread panel (PanelWeights: 64 bytes of bf16 vectors and a scale per row and group, 8.5 KiB at
// K = 1,024) that every x tile of the block reads, instead of decoding it again per 2 x rows. Guest
// instructions per weight row and group under qemu (docs/performance.md, "arm64"): 13 % fewer with the
// panel at 8 x rows, 19 % at 16, 27 % at 64; more at 3-4 rows, so it starts at 8.
//
// Numerics: a y[m, n] is one accumulator fed group by group in order of K (four BFDOTs from zero, then the
// scale's FMA), its lanes summed as (l0 + l1) + (l2 + l3); no tile shape, block or M changes that sequence,
// so a row's result does not depend on the batch. It differs from the fp32 path in rounding order, and
// BFDOT (without FEAT_EBF16) flushes subnormal inputs and rounds its two-product sums to odd: as for
// matmul_bfdot.cc's bf16 weights.
//
// Tested under qemu-user `-cpu max` (FEAT_BF16) by ops_test and the goldens (scripts/arm64_test.sh); no
// arm64 hardware was at hand to measure its speed.
#include "src/kernels/matmul_dpbf16.h"

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "src/kernels/bfdot-inl.h"
#include "src/kernels/matmul_blocking.h"
#include "src/kernels/mxfp4_tables.h"
#include "src/kernels/scratch.h"

namespace k3::kernels::dpbf16 {
namespace {

constexpr size_t kGroup = 32;         // elements of one scale group
constexpr size_t kGroupBytes = 16;    // its packed codes
constexpr size_t kMaxTileM = 2;       // x rows per register tile
constexpr size_t kTileN = 4;          // weight rows per register tile
constexpr size_t kPrefetchMaxM = 16;  // most x rows whose tiles prefetch weight rows ahead
constexpr size_t kPanelMinM = 8;      // fewest x rows for which a weight tile is decoded once (PanelWeights)

// Slot of group element e in the laid-out x (see the top of the file): vector q = 2 (e % 2) + (e / 2) / 8,
// word (e / 2) % 8.
inline size_t SlotOf(size_t e) { return 8 * (2 * (e % 2) + (e / 2) / 8) + (e / 2) % 8; }

struct Mxfp4Tile {
  const uint16_t* x[kMaxTileM];  // laid-out x rows
  float* y[kMaxTileM];           // &y[m, n0]
  size_t n_valid;                // 1..kTileN
};

K3_BFDOT_TARGET inline bfloat16x8_t AsBf16(uint8x16_t v) { return vreinterpretq_bf16_u8(v); }

// The weights of a tile decoded from the packed rows as they are read (see the top of the file).
struct PackedWeights {
  const uint8_t* w[kTileN];          // packed weight rows; past N the last valid row repeats (not stored)
  const uint8_t* s[kTileN];          // their scale rows
  const uint8_t* ahead[kTileN];      // packed rows a prefetch distance ahead
  const float* scale_values;         // Mxfp4Tables().e8m0
  uint8x16_t low_table, high_table;  // Mxfp4Tables()

  // Group g of tile row j -> wv, and its scale; prefetches the same group of row ahead[j] if kPrefetch.
  template <bool kPrefetch>
  K3_BFDOT_TARGET inline float Load(size_t j, size_t g, bfloat16x8_t (&wv)[4]) const {
    if constexpr (kPrefetch) __builtin_prefetch(ahead[j] + g * kGroupBytes);
    const uint8x16_t bytes = vld1q_u8(w[j] + g * kGroupBytes);
    const uint8x16_t even = vandq_u8(bytes, vdupq_n_u8(0x0F)), odd = vshrq_n_u8(bytes, 4);
    const uint8x16_t even_low = vqtbl1q_u8(low_table, even), even_high = vqtbl1q_u8(high_table, even);
    const uint8x16_t odd_low = vqtbl1q_u8(low_table, odd), odd_high = vqtbl1q_u8(high_table, odd);
    wv[0] = AsBf16(vzip1q_u8(even_low, even_high));
    wv[1] = AsBf16(vzip2q_u8(even_low, even_high));
    wv[2] = AsBf16(vzip1q_u8(odd_low, odd_high));
    wv[3] = AsBf16(vzip2q_u8(odd_low, odd_high));
    return scale_values[s[j][g]];
  }
};

// A weight tile decoded once (with more x rows than one tile holds): per tile row and group the four
// vectors PackedWeights::Load gives, and its scale. values [kTileN][groups][32] bf16, scales
// [kTileN][groups]. Every x tile meets the same vectors and scales in the same order on either route.
struct PanelWeights {
  const uint16_t* values;
  const float* scales;
  size_t groups;

  template <bool kPrefetch>
  K3_BFDOT_TARGET inline float Load(size_t j, size_t g, bfloat16x8_t (&wv)[4]) const {
    const uint16_t* p = values + (j * groups + g) * kGroup;
    for (size_t q = 0; q < 4; ++q) wv[q] = vreinterpretq_bf16_u16(vld1q_u16(p + 8 * q));
    return scales[j * groups + g];
  }

  // Decodes the tile of `source` into `buffer` (PanelFloats(groups) floats), prefetching as it goes when
  // kPrefetch.
  template <bool kPrefetch>
  K3_BFDOT_TARGET static PanelWeights Decode(const PackedWeights& source, size_t groups, float* buffer) {
    float* scales = buffer;
    uint16_t* values = reinterpret_cast<uint16_t*>(buffer + kTileN * groups);
    for (size_t j = 0; j < kTileN; ++j) {
      for (size_t g = 0; g < groups; ++g) {
        bfloat16x8_t wv[4];
        scales[j * groups + g] = source.Load<kPrefetch>(j, g, wv);
        uint16_t* p = values + (j * groups + g) * kGroup;
        for (size_t q = 0; q < 4; ++q) vst1q_u16(p + 8 * q, vreinterpretq_u16_bf16(wv[q]));
      }
    }
    return PanelWeights{values, scales, groups};
  }
  static size_t PanelFloats(size_t groups) { return kTileN * groups * (1 + kGroup / 2); }
};

// A kM x kTileN tile over the `groups` groups of K, its weights from `weights`.
template <size_t kM, bool kPrefetch, class Weights>
K3_BFDOT_TARGET inline void RunTile(const Mxfp4Tile& t, const Weights& weights, size_t groups) {
  float32x4_t acc[kM][kTileN];
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kTileN; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  }
  for (size_t g = 0; g < groups; ++g) {
    bfloat16x8_t xv[kM][4];
    for (size_t i = 0; i < kM; ++i) {
      for (size_t q = 0; q < 4; ++q) {
        xv[i][q] = vreinterpretq_bf16_u16(vld1q_u16(t.x[i] + g * kGroup + 8 * q));
      }
    }
    for (size_t j = 0; j < kTileN; ++j) {
      bfloat16x8_t wv[4];
      const float scale = weights.template Load<kPrefetch>(j, g, wv);
      for (size_t i = 0; i < kM; ++i) {
        float32x4_t dot = vbfdotq_f32(vdupq_n_f32(0.0f), xv[i][0], wv[0]);
        for (size_t q = 1; q < 4; ++q) dot = vbfdotq_f32(dot, xv[i][q], wv[q]);
        acc[i][j] = vfmaq_n_f32(acc[i][j], dot, scale);
      }
    }
  }
  for (size_t i = 0; i < kM; ++i) StoreLaneSums(acc[i], t.n_valid, t.y[i]);
}

// The x tiles of rows [m_begin, m_end) against one weight tile; the first prefetches when `prefetch`.
template <class Weights>
K3_BFDOT_TARGET void RunTiles(const Weights& weights, const uint16_t* xs, size_t x_stride, size_t m_begin,
                              size_t m_end, float* y, size_t N, size_t n0, size_t n_valid, size_t groups,
                              bool prefetch) {
  Mxfp4Tile t;
  t.n_valid = n_valid;
  for (size_t m0 = m_begin; m0 < m_end; m0 += kMaxTileM) {
    const size_t rows = std::min(kMaxTileM, m_end - m0);
    for (size_t i = 0; i < rows; ++i) {
      t.x[i] = xs + (m0 + i) * x_stride;
      t.y[i] = y + (m0 + i) * N + n0;
    }
    const bool prefetch_now = prefetch && m0 == m_begin;
    if (rows == 1) {
      if (prefetch_now) {
        RunTile<1, true>(t, weights, groups);
      } else {
        RunTile<1, false>(t, weights, groups);
      }
    } else if (prefetch_now) {
      RunTile<2, true>(t, weights, groups);
    } else {
      RunTile<2, false>(t, weights, groups);
    }
  }
}

K3_BFDOT_TARGET void Mxfp4Tiles(const uint16_t* xs, size_t M, size_t x_stride, size_t K,
                                const uint8_t* packed, const uint8_t* scales, float* y, size_t N,
                                size_t n_begin, size_t n_end) {
  const size_t groups = K / kGroup;
  const size_t row_bytes = K / 2;
  const size_t rows_per_m_block = XRowsPerBlock(M, x_stride * sizeof(uint16_t));
  const size_t n_tiles = (n_end - n_begin + kTileN - 1) / kTileN;
  const size_t ahead = PrefetchDistanceRows(kTileN, row_bytes);
  const bool prefetch = M <= kPrefetchMaxM;
  float* panel_buffer =
      M >= kPanelMinM ? ThreadScratch(ScratchSlot::kMatMulDecodedWeights, PanelWeights::PanelFloats(groups))
                      : nullptr;
  for (size_t m_block = 0; m_block < M; m_block += rows_per_m_block) {
    const size_t m_block_end = std::min(M, m_block + rows_per_m_block);
    for (size_t nt = 0; nt < n_tiles; ++nt) {
      const size_t n0 = n_begin + nt * kTileN;
      const size_t n_valid = std::min(kTileN, n_end - n0);
      PackedWeights weights;
      weights.scale_values = Mxfp4Tables().e8m0;
      weights.low_table = vld1q_u8(Mxfp4Tables().bf16_low);
      weights.high_table = vld1q_u8(Mxfp4Tables().bf16_high);
      for (size_t j = 0; j < kTileN; ++j) {
        const size_t n = n0 + std::min(j, n_valid - 1);
        weights.w[j] = packed + n * row_bytes;
        weights.s[j] = scales + n * groups;
        weights.ahead[j] = packed + PrefetchRow(n0, ahead, j, n_end, n) * row_bytes;
      }
      if (panel_buffer == nullptr) {
        RunTiles(weights, xs, x_stride, m_block, m_block_end, y, N, n0, n_valid, groups, prefetch);
        continue;
      }
      const PanelWeights panel = prefetch ? PanelWeights::Decode<true>(weights, groups, panel_buffer)
                                          : PanelWeights::Decode<false>(weights, groups, panel_buffer);
      RunTiles(panel, xs, x_stride, m_block, m_block_end, y, N, n0, n_valid, groups, false);
    }
  }
}

}  // namespace

void LayOutMxfp4Input(const float* x, size_t M, size_t K, uint16_t* xs, size_t x_stride) {
  for (size_t m = 0; m < M; ++m) {
    const float* src = x + m * K;
    uint16_t* dst = xs + m * x_stride;
    for (size_t g = 0; g < K / kGroup; ++g) {
      for (size_t e = 0; e < kGroup; ++e) {
        uint32_t bits;
        std::memcpy(&bits, src + g * kGroup + e, sizeof(bits));
        dst[g * kGroup + SlotOf(e)] = static_cast<uint16_t>(bits >> 16);
      }
    }
    std::fill(dst + K, dst + x_stride, uint16_t{0});
  }
}

void Mxfp4RowBlock(const uint16_t* xs, size_t M, size_t x_stride, size_t K, const uint8_t* packed,
                   const uint8_t* scales, float* y, size_t N, size_t n_begin, size_t n_end) {
  if (M == 0 || n_begin >= n_end) return;
  Mxfp4Tiles(xs, M, x_stride, K, packed, scales, y, N, n_begin, n_end);
}

}  // namespace k3::kernels::dpbf16

#endif  // __aarch64__
