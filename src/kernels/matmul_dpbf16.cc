// VDPBF16PS matmul over bf16 weights, and the CPU feature checks (matmul_dpbf16.h). Compiled with the
// baseline flags: only the functions below carry the AVX-512 target attribute (dpbf16-inl.h), so no inline
// function of a shared header is ever emitted with AVX-512 instructions, and callers reach them only
// after Supported().
//
// Work of one call: output rows n in [n_begin, n_end) for every x row, in register tiles of up to
// kMaxTileM x rows by kTileN = 4 weight rows, so a loaded weight vector serves up to four x rows, and at
// M = 1 four accumulator chains run side by side. (One weight row at a time at M = 1 read the weights
// 16-25 % slower at 2 threads in kernels_bench on the 2-core dev VM, medians of 4 alternating runs, and
// about as fast at 1 thread.) Tiles run over the whole of K; many x rows go in blocks that stay in L2
// (matmul_blocking.h). None of this changes the order in which a y[m, n] accumulates (see the header).
//
// Small batches (3 to 16 x rows) prefetch: the first x tile of each weight tile, at each chunk, prefetches
// the same chunk of the rows a tile or more ahead (at least 4 KiB). There a tile spends 4-16 dot products on
// each weight line, and the hardware prefetcher alone left the loads waiting: with the prefetch, calls at
// M = 3-16, K = 2048 / 7168, N = 2048 took up to 23 % less time, in every run but one (M = 8, K = 7168:
// 0.6 % more) (kernels_bench shapes, the two variants alternating call for call, 1 and 2 threads, 2-core
// dev VM). At M = 1 it took 2-11 % more in all six runs, and at M = 2 4-9 % more at K = 7168, so one and
// two rows stream with the hardware prefetcher alone; from 32 rows on the tile is bound by the dot
// products.
#include "src/kernels/matmul_dpbf16.h"

#include <algorithm>

#include "src/kernels/dpbf16-inl.h"
#include "src/kernels/matmul_blocking.h"

namespace k3::kernels::dpbf16 {

#if K3_HAVE_DPBF16
namespace {

constexpr size_t kChunk = kBf16Chunk;
constexpr size_t kMaxTileM = 4;  // x rows per register tile
constexpr size_t kTileN = 4;     // weight rows per register tile
// Prefetches of the rows ahead (see the top) for kPrefetchMinM..kPrefetchMaxM x rows.
constexpr size_t kPrefetchMinM = 3;
constexpr size_t kPrefetchMaxM = 16;

struct Tile {
  const uint16_t* x[kMaxTileM];    // x rows (padded to whole chunks)
  float* y[kMaxTileM];             // &y[m, n0]
  const uint16_t* w[kTileN];       // weight rows; past N the last valid row repeats (not stored)
  const uint16_t* next_w[kTileN];  // rows a prefetch distance ahead (the tile's own near n_end)
  size_t n_valid;                  // 1..kN
};

// A kM x kN tile over the whole of K. The chunk at `full_chunks` (present when K % 32 != 0) is read with a
// masked load, so nothing past a weight row is touched.
template <size_t kM, size_t kN, bool kPrefetch>
K3_DPBF16_TARGET inline void RunTile(const Tile& t, size_t num_chunks, size_t full_chunks, size_t K) {
  static_assert(kN == 4, "the lane sums are taken four accumulators at a time");
  __m512 acc[kM][kN];
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kN; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  size_t c = 0;
  for (; c < full_chunks; ++c) {
    __m512bh xv[kM];
    for (size_t i = 0; i < kM; ++i) xv[i] = (__m512bh)_mm512_loadu_si512(t.x[i] + c * kChunk);
    for (size_t j = 0; j < kN; ++j) {
      if constexpr (kPrefetch)
        _mm_prefetch(reinterpret_cast<const char*>(t.next_w[j] + c * kChunk), _MM_HINT_T0);
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(t.w[j] + c * kChunk);
      for (size_t i = 0; i < kM; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv[i], wv);
    }
  }
  if (c < num_chunks) {  // the partial last chunk of each row
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (K - c * kChunk)) - 1);
    for (size_t j = 0; j < kN; ++j) {
      const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(mask, t.w[j] + c * kChunk);
      for (size_t i = 0; i < kM; ++i) {
        acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)_mm512_loadu_si512(t.x[i] + c * kChunk), wv);
      }
    }
  }
  for (size_t i = 0; i < kM; ++i) StoreSumsOfLanes4(acc[i], t.n_valid, t.y[i]);
}

template <size_t kN>
K3_DPBF16_TARGET void RowBlockTiles(const uint16_t* xs, size_t M, size_t x_stride, size_t K,
                                    const uint16_t* W, float* y, size_t N, size_t n_begin, size_t n_end) {
  const size_t num_chunks = (K + kChunk - 1) / kChunk;
  const size_t full_chunks = K / kChunk;
  const size_t rows_per_m_block = XRowsPerBlock(M, x_stride * sizeof(uint16_t));
  const size_t n_tiles = (n_end - n_begin + kN - 1) / kN;
  const size_t ahead = PrefetchDistanceRows(kN, K * sizeof(uint16_t));
  const bool prefetch = M >= kPrefetchMinM && M <= kPrefetchMaxM;
  for (size_t m_block = 0; m_block < M; m_block += rows_per_m_block) {
    const size_t m_block_end = std::min(M, m_block + rows_per_m_block);
    for (size_t nt = 0; nt < n_tiles; ++nt) {
      const size_t n0 = n_begin + nt * kN;
      Tile t;
      t.n_valid = std::min(kN, n_end - n0);
      for (size_t j = 0; j < kN; ++j) {
        const size_t n = n0 + std::min(j, t.n_valid - 1);
        t.w[j] = W + n * K;
        t.next_w[j] = W + PrefetchRow(n0, ahead, j, n_end, n) * K;
      }
      for (size_t m0 = m_block; m0 < m_block_end; m0 += kMaxTileM) {
        const size_t rows = std::min(kMaxTileM, m_block_end - m0);
        for (size_t i = 0; i < rows; ++i) {
          t.x[i] = xs + (m0 + i) * x_stride;
          t.y[i] = y + (m0 + i) * N + n0;
        }
        const bool prefetch_tile = prefetch && m0 == m_block;  // the x tile that pulls the rows from memory
        switch (rows) {
          case 1:
            prefetch_tile ? RunTile<1, kN, true>(t, num_chunks, full_chunks, K)
                          : RunTile<1, kN, false>(t, num_chunks, full_chunks, K);
            break;
          case 2:
            prefetch_tile ? RunTile<2, kN, true>(t, num_chunks, full_chunks, K)
                          : RunTile<2, kN, false>(t, num_chunks, full_chunks, K);
            break;
          case 3:
            prefetch_tile ? RunTile<3, kN, true>(t, num_chunks, full_chunks, K)
                          : RunTile<3, kN, false>(t, num_chunks, full_chunks, K);
            break;
          default:
            prefetch_tile ? RunTile<4, kN, true>(t, num_chunks, full_chunks, K)
                          : RunTile<4, kN, false>(t, num_chunks, full_chunks, K);
            break;
        }
      }
    }
  }
}

}  // namespace

bool Supported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bf16");
  }();
  return supported;
}

bool Mxfp4Supported() {
  static const bool supported = Supported() && __builtin_cpu_supports("avx512vbmi");
  return supported;
}

void RowBlock(const uint16_t* xs, size_t M, size_t x_stride, size_t K, const uint16_t* W, float* y, size_t N,
              size_t n_begin, size_t n_end) {
  if (M == 0 || n_begin >= n_end) return;
  RowBlockTiles<kTileN>(xs, M, x_stride, K, W, y, N, n_begin, n_end);
}

#elif !defined(__aarch64__)  // neither AVX512_BF16 code nor BFDOT (matmul_bfdot.cc) in this build

bool Supported() { return false; }
bool Mxfp4Supported() { return false; }

void RowBlock(const uint16_t*, size_t, size_t, size_t, const uint16_t*, float*, size_t, size_t, size_t) {}

#endif

}  // namespace k3::kernels::dpbf16
