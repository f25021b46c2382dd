// The arm64 MXFP4 x int8 kernels (mxfp4_q8.h). Compiled for baseline Armv8.0; the dotprod and I8MM
// variants' functions carry target attributes, and mxfp4_q8.cc calls them only where the kernel reports the
// feature (HWCAP_ASIMDDP, HWCAP2_I8MM).
//
// Decode (all three): a weight group is 16 packed bytes, one load; a mask and a shift give the low nibbles
// (even elements) and the high ones (odd elements), and a byte lookup (TBL) of each gives 16 doubled E2M1
// integers, in the Q8 layout's slot order.
//   neon      SMULL / SMLAL into int16 (4 products of |x| <= 127, |w| <= 12 per lane), one pairwise widening
//             add to int32: 5 instructions per x row and weight row; then pairwise adds (ADDP) of 4 weight
//             rows' partial sums give the 4 exact group dots of a tile row.
//   neon_dot  SDOT: 2 instructions per x row and weight row, the same ADDP tree.
//   i8mm      SMMLA: 2 x rows by 2 weight rows by 8 values per instruction, so 4 of them give the 4 exact
//   dots
//             of an x pair with a weight pair without any horizontal sum (x and weight halves interleaved by
//             ZIP1 / ZIP2 of 64-bit lanes). A last odd x row takes neon_dot's tile (same results).
// Each tile keeps y[m, n] in its own fp32 lane and adds float(dot) * (d * h) per group: the definition.
//
// Tested under qemu-user (scripts/arm64_test.sh); no arm64 hardware was at hand to time them.
#include "src/kernels/mxfp4_q8.h"

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>

#include "src/kernels/mxfp4_q8_driver-inl.h"
#include "src/kernels/mxfp4_tables.h"

#define K3_Q8_DOT_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#define K3_Q8_I8MM_TARGET __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))

namespace k3::kernels::q8 {
namespace {

struct DecodedGroup {
  int8x16_t even, odd;  // slots 0..15 and 16..31
};

inline DecodedGroup DecodeGroup(const uint8_t* packed_group, int8x16_t table) {
  const uint8x16_t bytes = vld1q_u8(packed_group);
  return {vqtbl1q_s8(table, vandq_u8(bytes, vdupq_n_u8(0x0F))), vqtbl1q_s8(table, vshrq_n_u8(bytes, 4))};
}

inline DecodedGroup LoadX(const int8_t* x_group) { return {vld1q_s8(x_group), vld1q_s8(x_group + 16)}; }

// The 4 group dots [d0, d1, d2, d3] from 4 vectors of partial sums.
inline int32x4_t SumsOf4(const int32x4_t (&partial)[4]) {
  return vpaddq_s32(vpaddq_s32(partial[0], partial[1]), vpaddq_s32(partial[2], partial[3]));
}

// [h(n0), h(n1), h(n2), h(n3)] of group g.
inline float32x4_t GroupHalfScales(const Q8Tile& t, size_t g, const float* half) {
  const float h[4] = {half[t.scales[0][g]], half[t.scales[1][g]], half[t.scales[2][g]], half[t.scales[3][g]]};
  return vld1q_f32(h);
}

inline float32x4_t AddTerms(float32x4_t acc, int32x4_t dots, float32x4_t factor) {
  return vaddq_f32(acc, vmulq_f32(vcvtq_f32_s32(dots), factor));
}

inline void StoreRow(float32x4_t acc, const Q8Tile& t, size_t i) {
  float lanes[kQ8TileN];
  vst1q_f32(lanes, acc);
  StoreTileRow(lanes, t.n_valid, t.y[i]);
}

// The tile loop of the neon and neon_dot variants: Dot(x, w) gives a weight row's 4 partial sums.
template <size_t kM, bool kPrefetch, class Dot>
inline void RunDotTile(const Q8Tile& t, size_t groups, const Dot& dot) {
  const Mxfp4LookupTables& tables = Mxfp4Tables();
  const int8x16_t table = vld1q_s8(tables.e2m1_x2);
  float32x4_t acc[kM];
#pragma GCC unroll 4
  for (size_t i = 0; i < kM; ++i) acc[i] = vdupq_n_f32(0.0f);
  size_t other_offset = 0;
  for (size_t g = 0; g < groups; ++g) {
    if constexpr (kPrefetch) PrefetchGroup(t, g, &other_offset);
    DecodedGroup w[kQ8TileN];
#pragma GCC unroll 4
    for (size_t j = 0; j < kQ8TileN; ++j) w[j] = DecodeGroup(t.packed[j] + g * 16, table);
    const float32x4_t h = GroupHalfScales(t, g, tables.e8m0_half);
#pragma GCC unroll 4
    for (size_t i = 0; i < kM; ++i) {
      const DecodedGroup x = LoadX(t.x_values[i] + g * kQ8Group);
      int32x4_t partial[kQ8TileN];
#pragma GCC unroll 4
      for (size_t j = 0; j < kQ8TileN; ++j) partial[j] = dot(x, w[j]);
      acc[i] = AddTerms(acc[i], SumsOf4(partial), vmulq_f32(vdupq_n_f32(t.x_scales[i][g]), h));
    }
  }
#pragma GCC unroll 4
  for (size_t i = 0; i < kM; ++i) StoreRow(acc[i], t, i);
}

}  // namespace

// ---- neon ----------------------------------------------------------------------------------------
namespace neon {
namespace {

struct Dot {
  int32x4_t operator()(const DecodedGroup& x, const DecodedGroup& w) const {
    int16x8_t p = vmull_s8(vget_low_s8(x.even), vget_low_s8(w.even));
    p = vmlal_high_s8(p, x.even, w.even);
    p = vmlal_s8(p, vget_low_s8(x.odd), vget_low_s8(w.odd));
    p = vmlal_high_s8(p, x.odd, w.odd);
    return vpaddlq_s16(p);
  }
};

template <size_t kM, bool kPrefetch>
void RunTile(const Q8Tile& t, size_t groups) {
  RunDotTile<kM, kPrefetch>(t, groups, Dot());
}

struct Variant {
  static constexpr size_t kMaxTileM = 2;
  static void Run(size_t rows, const Q8Tile& t, size_t groups, bool prefetch) {
    if (rows == 1) return prefetch ? RunTile<1, true>(t, groups) : RunTile<1, false>(t, groups);
    return prefetch ? RunTile<2, true>(t, groups) : RunTile<2, false>(t, groups);
  }
};

}  // namespace

void RowBlock(const RowBlockArgs& args) { RunRowBlock<Variant>(args); }

// The quantiser, bit for bit scalar::QuantizeRowsQ8: amax through FMAXNM (a NaN input is never taken, as
// std::max in the definition); LD2 splits a group into its even and odd elements (the slot order); the same
// fp32 multiply, then FCVTNS (round to nearest even, NaN to 0; the definition's add and subtract of
// 1.5 * 2^23 round the same way for these magnitudes), the clamp and two saturating narrowings.
void QuantizeGroups(const float* x, size_t groups, int8_t* values, float* scales) {
  for (size_t g = 0; g < groups; ++g) {
    const float* group = x + g * kQ8Group;
    float32x4x2_t pairs[4];
    float32x4_t amax = vdupq_n_f32(0.0f);
    for (size_t i = 0; i < 4; ++i) {
      pairs[i] = vld2q_f32(group + 8 * i);  // val[0]: elements 8 i + 0, 2, 4, 6; val[1]: the odd ones
      amax = vmaxnmq_f32(amax, vmaxnmq_f32(vabsq_f32(pairs[i].val[0]), vabsq_f32(pairs[i].val[1])));
    }
    float inverse;
    int8_t* q = values + g * kQ8Group;
    if (!GroupScale(vmaxnmvq_f32(amax), scales + g, &inverse)) {
      vst1q_s8(q, vdupq_n_s8(0));
      vst1q_s8(q + 16, vdupq_n_s8(0));
      continue;
    }
    for (size_t half = 0; half < 2; ++half) {  // 0: even elements (slots 0..15), 1: odd (16..31)
      int16x8_t words[2];
      for (size_t w = 0; w < 2; ++w) {
        int32x4_t ints[2];
        for (size_t i = 0; i < 2; ++i) {
          const int32x4_t n = vcvtnq_s32_f32(vmulq_n_f32(pairs[2 * w + i].val[half], inverse));
          ints[i] = vminq_s32(vmaxq_s32(n, vdupq_n_s32(-127)), vdupq_n_s32(127));
        }
        words[w] = vcombine_s16(vqmovn_s32(ints[0]), vqmovn_s32(ints[1]));
      }
      vst1q_s8(q + 16 * half, vcombine_s8(vqmovn_s16(words[0]), vqmovn_s16(words[1])));
    }
  }
}

}  // namespace neon

// ---- neon_dot ------------------------------------------------------------------------------------
namespace neon_dot {
namespace {

struct Dot {
  K3_Q8_DOT_TARGET int32x4_t operator()(const DecodedGroup& x, const DecodedGroup& w) const {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), x.even, w.even), x.odd, w.odd);
  }
};

// flatten: RunDotTile (baseline code) and Dot (+dotprod) are both inlined here, into one +dotprod body.
template <size_t kM, bool kPrefetch>
K3_Q8_DOT_TARGET __attribute__((flatten)) void RunTile(const Q8Tile& t, size_t groups) {
  RunDotTile<kM, kPrefetch>(t, groups, Dot());
}

struct Variant {
  static constexpr size_t kMaxTileM = 4;
  static void Run(size_t rows, const Q8Tile& t, size_t groups, bool prefetch) {
    switch (rows) {
      case 1:
        return prefetch ? RunTile<1, true>(t, groups) : RunTile<1, false>(t, groups);
      case 2:
        return prefetch ? RunTile<2, true>(t, groups) : RunTile<2, false>(t, groups);
      case 3:
        return prefetch ? RunTile<3, true>(t, groups) : RunTile<3, false>(t, groups);
      default:
        return prefetch ? RunTile<4, true>(t, groups) : RunTile<4, false>(t, groups);
    }
  }
};

}  // namespace

void RowBlock(const RowBlockArgs& args) { RunRowBlock<Variant>(args); }

}  // namespace neon_dot

// ---- i8mm ----------------------------------------------------------------------------------------
namespace i8mm {
namespace {

// 64-bit halves a and b of two vectors side by side: [lo(a), lo(b)] and [hi(a), hi(b)].
K3_Q8_I8MM_TARGET inline int8x16_t ZipLow(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
K3_Q8_I8MM_TARGET inline int8x16_t ZipHigh(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// A group's 32 values of two rows as 4 SMMLA operands (2 rows x 8 values each).
struct PairOperands {
  int8x16_t part[4];
};
K3_Q8_I8MM_TARGET inline PairOperands Interleave(const DecodedGroup& a, const DecodedGroup& b) {
  return {{ZipLow(a.even, b.even), ZipHigh(a.even, b.even), ZipLow(a.odd, b.odd), ZipHigh(a.odd, b.odd)}};
}

// The exact dots [x0.wa, x0.wb, x1.wa, x1.wb] of an x pair with a weight pair.
K3_Q8_I8MM_TARGET inline int32x4_t PairDots(const PairOperands& x, const PairOperands& w) {
  int32x4_t dots = vmmlaq_s32(vdupq_n_s32(0), x.part[0], w.part[0]);
#pragma GCC unroll 4
  for (size_t p = 1; p < 4; ++p) dots = vmmlaq_s32(dots, x.part[p], w.part[p]);
  return dots;
}

// kPairs pairs of x rows by the tile's 4 weight rows (2 pairs). acc[p][q]: x pair p, weight pair q, lanes
// [m0 n0, m0 n1, m1 n0, m1 n1].
template <size_t kPairs, bool kPrefetch>
K3_Q8_I8MM_TARGET void RunTile(const Q8Tile& t, size_t groups) {
  const Mxfp4LookupTables& tables = Mxfp4Tables();
  const int8x16_t table = vld1q_s8(tables.e2m1_x2);
  float32x4_t acc[kPairs][2];
#pragma GCC unroll 4
  for (size_t p = 0; p < kPairs; ++p) acc[p][0] = acc[p][1] = vdupq_n_f32(0.0f);
  size_t other_offset = 0;
  for (size_t g = 0; g < groups; ++g) {
    if constexpr (kPrefetch) PrefetchGroup(t, g, &other_offset);
    DecodedGroup w[kQ8TileN];
#pragma GCC unroll 4
    for (size_t j = 0; j < kQ8TileN; ++j) w[j] = DecodeGroup(t.packed[j] + g * 16, table);
    const PairOperands w01 = Interleave(w[0], w[1]), w23 = Interleave(w[2], w[3]);
    const float32x4_t h = GroupHalfScales(t, g, tables.e8m0_half);
    const float32x4_t h01 = vcombine_f32(vget_low_f32(h), vget_low_f32(h));    // [h0, h1, h0, h1]
    const float32x4_t h23 = vcombine_f32(vget_high_f32(h), vget_high_f32(h));  // [h2, h3, h2, h3]
#pragma GCC unroll 4
    for (size_t p = 0; p < kPairs; ++p) {
      const PairOperands x =
          Interleave(LoadX(t.x_values[2 * p] + g * kQ8Group), LoadX(t.x_values[2 * p + 1] + g * kQ8Group));
      const float32x4_t d =
          vcombine_f32(vdup_n_f32(t.x_scales[2 * p][g]), vdup_n_f32(t.x_scales[2 * p + 1][g]));
      acc[p][0] = AddTerms(acc[p][0], PairDots(x, w01), vmulq_f32(d, h01));
      acc[p][1] = AddTerms(acc[p][1], PairDots(x, w23), vmulq_f32(d, h23));
    }
  }
#pragma GCC unroll 4
  for (size_t p = 0; p < kPairs; ++p) {
#pragma GCC unroll 4
    for (size_t r = 0; r < 2; ++r) {  // x row 2 p + r: lanes 2 r, 2 r + 1 of each weight pair
      const float32x4_t row = vcombine_f32(r == 0 ? vget_low_f32(acc[p][0]) : vget_high_f32(acc[p][0]),
                                           r == 0 ? vget_low_f32(acc[p][1]) : vget_high_f32(acc[p][1]));
      StoreRow(row, t, 2 * p + r);
    }
  }
}

struct Variant {
  static constexpr size_t kMaxTileM = 4;
  static void Run(size_t rows, const Q8Tile& t, size_t groups, bool prefetch) {
    if (rows % 2 == 1) {  // the odd row on SDOT (bit-identical), the pairs below
      Q8Tile last = t;
      last.x_values[0] = t.x_values[rows - 1];
      last.x_scales[0] = t.x_scales[rows - 1];
      last.y[0] = t.y[rows - 1];
      last.other_lines = rows == 1 ? t.other_lines : 0;
      const bool prefetch_last = prefetch && rows == 1;
      prefetch_last ? neon_dot::RunTile<1, true>(last, groups) : neon_dot::RunTile<1, false>(last, groups);
      if (rows == 1) return;
    }
    if (rows >= 4) return prefetch ? RunTile<2, true>(t, groups) : RunTile<2, false>(t, groups);
    return prefetch ? RunTile<1, true>(t, groups) : RunTile<1, false>(t, groups);
  }
};

}  // namespace

void RowBlock(const RowBlockArgs& args) { RunRowBlock<Variant>(args); }

}  // namespace i8mm

}  // namespace k3::kernels::q8

#endif  // __aarch64__
