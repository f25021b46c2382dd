// The loop every MXFP4 x int8 kernel variant (mxfp4_q8.h) shares: one pool task's output rows cut into
// register tiles of up to Variant::kMaxTileM x rows by kQ8TileN = 4 weight rows, each over the whole of K,
// many x rows taken in blocks that stay in L2 (matmul_blocking.h). Plain C++: the variants' tile functions
// carry their own target attributes (mxfp4_q8_x86.cc, mxfp4_q8_arm.cc) and are called, never inlined, from
// here. Included only by those files and mxfp4_q8.cc.
//
// Decode-sized calls (up to kQ8PrefetchMaxM x rows) prefetch as the fp32 path does (matmul-inl.h): the first
// x tile of each weight tile pulls, group by group, the rows a prefetch distance ahead, and the slice of
// another task's weights the overlap gave this task (matmul_overlap.h).
//
// Tiles never change results: each y[m, n] is its own fp32 lane fed group by group in order of K with the
// group's exact integer dot (mxfp4_q8.h), whatever the tile it is in.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "src/kernels/matmul_blocking.h"
#include "src/kernels/matmul_overlap.h"
#include "src/kernels/mxfp4_q8.h"

namespace k3::kernels::q8 {

inline constexpr size_t kQ8TileN = 4;          // weight rows per register tile
inline constexpr size_t kQ8MaxTileM = 4;       // most x rows per register tile of any variant
inline constexpr size_t kQ8PrefetchMaxM = 16;  // most x rows whose tiles prefetch

struct Q8Tile {
  const int8_t* x_values[kQ8MaxTileM];  // x rows (Q8 layout)
  const float* x_scales[kQ8MaxTileM];
  float* y[kQ8MaxTileM];                 // &y[m, n0]
  const uint8_t* packed[kQ8TileN];       // weight rows; past N the last valid row repeats
  const uint8_t* scales[kQ8TileN];       // their E8M0 bytes
  const uint8_t* next_packed[kQ8TileN];  // rows a prefetch distance ahead (prefetching tiles)
  size_t n_valid;                        // 1..kQ8TileN
  const char* other_begin = nullptr;     // another task's weights, other_lines lines a group
  const char* other_end = nullptr;
  size_t other_lines = 0;
};

// y[0, n_valid) of one x row from 4 lanes.
inline void StoreTileRow(const float (&lanes)[kQ8TileN], size_t n_valid, float* y) {
  std::memcpy(y, lanes, n_valid * sizeof(float));
}

// The prefetches of group g in a prefetching tile: group g of the rows ahead, and other_lines lines of the
// other task's weights from *other_offset on.
inline void PrefetchGroup(const Q8Tile& t, size_t g, size_t* other_offset) {
#pragma GCC unroll 4
  for (size_t j = 0; j < kQ8TileN; ++j) __builtin_prefetch(t.next_packed[j] + g * 16, 0, 3);
  const size_t other_bytes = static_cast<size_t>(t.other_end - t.other_begin);
  for (size_t i = 0; i < t.other_lines && *other_offset < other_bytes;
       ++i, *other_offset += kCacheLineBytes) {
    __builtin_prefetch(t.other_begin + *other_offset, 0, 2);  // into L2, as the fp32 path
  }
}

// Variant: kMaxTileM and Run(rows, tile, groups, prefetch), which computes the tile's rows x rows.
template <class Variant>
void RunRowBlock(const RowBlockArgs& a) {
  if (a.M == 0 || a.n_begin >= a.n_end) return;
  const size_t groups = a.K / kQ8Group;
  const size_t row_bytes = a.K / 2;
  const size_t rows_per_m_block = XRowsPerBlock(a.M, a.K + groups * sizeof(float));
  const size_t n_tiles = (a.n_end - a.n_begin + kQ8TileN - 1) / kQ8TileN;
  const size_t ahead = PrefetchDistanceRows(kQ8TileN, row_bytes);
  const bool prefetch = a.M <= kQ8PrefetchMaxM;
  for (size_t m_block = 0; m_block < a.M; m_block += rows_per_m_block) {
    const size_t m_block_end = std::min(a.M, m_block + rows_per_m_block);
    for (size_t nt = 0; nt < n_tiles; ++nt) {
      const size_t n0 = a.n_begin + nt * kQ8TileN;
      Q8Tile t;
      t.n_valid = std::min(kQ8TileN, a.n_end - n0);
      for (size_t j = 0; j < kQ8TileN; ++j) {
        const size_t n = n0 + std::min(j, t.n_valid - 1);
        t.packed[j] = a.packed + n * row_bytes;
        t.scales[j] = a.scales + n * groups;
        t.next_packed[j] = a.packed + PrefetchRow(n0, ahead, j, a.n_end, n) * row_bytes;
      }
      if (prefetch && a.other_bytes != 0 && m_block == 0) {  // tile nt: the nt-th slice, over its groups
        const size_t slice = ((a.other_bytes + n_tiles - 1) / n_tiles + kCacheLineBytes - 1) /
                             kCacheLineBytes * kCacheLineBytes;
        t.other_begin = a.other_begin + std::min(a.other_bytes, nt * slice);
        t.other_end = a.other_begin + std::min(a.other_bytes, (nt + 1) * slice);
        t.other_lines = (slice + kCacheLineBytes * groups - 1) / (kCacheLineBytes * groups);
      }
      if (prefetch) {  // the scales of the rows ahead (K / 32 bytes each)
        for (size_t j = 0; j < kQ8TileN; ++j) {
          const uint8_t* next_scales =
              a.scales + static_cast<size_t>(t.next_packed[j] - a.packed) / row_bytes * groups;
          for (size_t b = 0; b < groups; b += kCacheLineBytes) __builtin_prefetch(next_scales + b, 0, 3);
        }
      }
      for (size_t m0 = m_block; m0 < m_block_end; m0 += Variant::kMaxTileM) {
        const size_t rows = std::min(Variant::kMaxTileM, m_block_end - m0);
        for (size_t i = 0; i < rows; ++i) {
          t.x_values[i] = a.x_values + (m0 + i) * a.K;
          t.x_scales[i] = a.x_scales + (m0 + i) * groups;
          t.y[i] = a.y + (m0 + i) * a.N + n0;
        }
        Variant::Run(rows, t, groups, prefetch && m0 == m_block);
      }
    }
  }
}

}  // namespace k3::kernels::q8

// The quantisers' shared step (mxfp4_q8.h): a group's scale d and multiplier 127 / amax from its largest
// magnitude; false (d = 0, the group quantises to zeros) below kQ8MinAmax, where 127 / amax would overflow
// fp32 (from about 3.7e-37): such groups add nothing to an fp32 sum that holds any normal-sized term.
namespace k3::kernels::q8 {
inline constexpr float kQ8MinAmax = 0x1p-100f;
inline bool GroupScale(float amax, float* d, float* inverse) {
  if (!(amax >= kQ8MinAmax)) {
    *d = 0.0f;
    return false;
  }
  *d = amax / 127.0f;
  *inverse = 127.0f / amax;
  return true;
}
}  // namespace k3::kernels::q8

// The variants' entry points (mxfp4_q8_x86.cc, mxfp4_q8_arm.cc), called by mxfp4_q8.cc's dispatch only on
// CPUs that have their instructions. QuantizeGroups: `groups` consecutive groups of x (rows of whole
// groups laid end to end) into the Q8 layout, bit for bit as scalar::QuantizeRowsQ8.
namespace k3::kernels::q8 {
#if defined(__x86_64__) && defined(__GNUC__)
namespace avx2 {
void RowBlock(const RowBlockArgs& args);
void QuantizeGroups(const float* x, size_t groups, int8_t* values, float* scales);
}  // namespace avx2
namespace avx_vnni {
void RowBlock(const RowBlockArgs& args);
}
namespace avx512_vnni {
void RowBlock(const RowBlockArgs& args);
}
#endif
#if defined(__aarch64__) && defined(__GNUC__)
namespace neon {
void RowBlock(const RowBlockArgs& args);
void QuantizeGroups(const float* x, size_t groups, int8_t* values, float* scales);
}  // namespace neon
namespace neon_dot {
void RowBlock(const RowBlockArgs& args);
}
namespace i8mm {
void RowBlock(const RowBlockArgs& args);
}
#endif
}  // namespace k3::kernels::q8
