// How the matmul kernels (matmul-inl.h, matmul_dpbf16.cc, mxfp4_dpbf16.cc) cut many rows of x into
// blocks. A block's x rows are taken over the whole of K: every register tile (x rows by 4 weight rows)
// keeps its accumulators in registers from the first chunk of K to the last, and the weight tile (4 rows,
// the whole of K: 16 KiB of bf16 at K = 2048, 56 KiB at 7168) stays in L1 or L2 while it meets every x row
// of the block. The block itself stays in L2 while the weight tiles of a pool task go by.
//
// Before, K was also cut (blocks of 512 elements, 64 x rows), each tile parking its accumulators in memory
// between K blocks; that ran 0.7-0.9x as fast at K = 1024-7168 on the 2-core dev VM (docs/performance.md,
// "Tiles and blocking").
// Blocking never changes a result: each y[m, n] is one accumulator fed over K in order whatever the block.
//
// Also here: how far ahead the dot-product kernels prefetch weight rows where they do (small batches).
#pragma once

#include <algorithm>
#include <cstddef>

namespace k3::kernels {

inline constexpr size_t kXBlockBytes = size_t{512} << 10;  // most bytes of x in one block of x rows
inline constexpr size_t kMaxXBlockRows = 64;               // most x rows in one block

// x rows per block for M rows of x_row_bytes each (as laid out for the kernel): a multiple of 4 (the
// tallest tile), at least 4, at most kMaxXBlockRows; M itself when M is smaller.
inline size_t XRowsPerBlock(size_t M, size_t x_row_bytes) {
  const size_t fit = kXBlockBytes / std::max<size_t>(1, x_row_bytes);
  const size_t rows = std::clamp<size_t>(fit / 4 * 4, 4, kMaxXBlockRows);
  return M > 0 && M < rows ? M : rows;
}

inline constexpr size_t kPrefetchBytesAhead = 4096;  // least distance of the weight-row prefetches

// Weight rows between a tile's first row and the first row it prefetches: whole tiles of tile_rows rows of
// row_bytes each, at least kPrefetchBytesAhead.
inline size_t PrefetchDistanceRows(size_t tile_rows, size_t row_bytes) {
  const size_t tile_bytes = std::max<size_t>(1, tile_rows * row_bytes);
  return tile_rows * std::max<size_t>(1, (kPrefetchBytesAhead + tile_bytes - 1) / tile_bytes);
}

// The weight row that row j of the tile starting at n0 prefetches: the row `ahead` rows on, or the tile's
// own row own_row where that one would lie at or past n_end (the end of the call's range).
inline size_t PrefetchRow(size_t n0, size_t ahead, size_t j, size_t n_end, size_t own_row) {
  return n0 + ahead + j < n_end ? n0 + ahead + j : own_row;
}

}  // namespace k3::kernels
