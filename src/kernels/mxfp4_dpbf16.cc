// VDPBF16PS matmul over MXFP4 weights (matmul_dpbf16.h, spec §3.3). Compiled with the baseline flags;
// only the functions below carry AVX-512 target attributes (dpbf16-inl.h), and MatMulGroup calls them
// only after Mxfp4Supported().
//
// A block of 128 elements of a weight row is 64 packed bytes (4 scale groups of 16 bytes) and is read with
// one load. It becomes four bf16 vectors q = 0..3. Word w of vector q takes the element 16 (w / 4) + 4q +
// w % 4: a nibble of the same 64-bit word of the packed block, so one multishift (VPMULTISHIFTQB: each
// output byte is any 8 bits of its own qword) brings every word's nibble into its low bits, and one word
// permute (VPERMW, which reads only the low 5 bits of each index) looks the E2M1 code up in a table of the
// 16 bf16 patterns, repeated so that the neighbouring nibble in bit 4 does not matter. Two instructions per
// 32 weights. Lane l (a word pair) of any vector then holds elements of group l / 4, so the four vectors'
// dot products with x (laid out the same way by LayOutMxfp4Input) go into one temporary whose lane l
// belongs to group l / 4, and a single FMA applies the four groups' scales: acc += temporary * [s0 x4,
// s1 x4, s2 x4, s3 x4].
//
// Tiles: up to kMaxTileM x rows by 4 weight rows (four independent accumulator chains even at M = 1).
// Blocks of x rows as in matmul_dpbf16.cc (matmul_blocking.h). A last block with fewer than four groups is
// read with a masked load; its missing groups decode to zeros against zero x.
//
// Up to kMaxTileM x rows (decode), where each weight is read once from memory: a tile's four rows are four
// short streams (K / 2 bytes each, 1-3.5 KiB at K3 sizes) plus the scales in another array, too short for
// the hardware prefetcher to ramp up. So each block step prefetches the same block of the rows a tile or more
// ahead (at least kPrefetchBytesAhead), and each tile start those rows' scales. The scales are converted four
// blocks at a time (one widening of 16 bytes; a lane permute per block). On the 2-core dev VM (Zen 5) one
// thread streamed the weights at 0.39-0.51 of a plain read of memory without the prefetches and 0.56-0.70
// with them (kernel in L2: ~36 GB/s).
//
// Decode once for all x rows: with more x rows than one tile holds (M > kMaxTileM), the decode would be
// repeated for every tile of x rows. So each 4-row weight panel is first decoded into a per-thread buffer
// (per weight row and block: the four bf16 vectors and the scale vector, 320 bytes; 10 KiB at K = 1024),
// once per block of x rows, and tiles of kPanelTileM x rows then read it from L1 or L2, holding their x
// in registers (RunPanelTile). The arithmetic of a y[m, n] is the same instruction sequence on every route
// (the same vectors meet in the same order), so results do not depend on M. Up to kPrefetchMaxM x rows
// (batched decode: an expert's share of a batch) the panel decode prefetches the rows a tile ahead as the
// decode route does: at M = 5-16 the calls took 15-25 % less time at K3's expert shape (K = 3584, N =
// 3072) and a median 8 % less at mini-k3's (1024 x 1024: from 7 % more to 26 % less, calls of ~0.1 ms),
// with and without the prefetch alternating call for call in kernels_bench (1 and 2 threads); at 32 rows
// the decode is a small part of a tile's work.
#include <algorithm>
#include <cstring>

#include "src/base/bf16.h"
#include "src/kernels/dpbf16-inl.h"
#include "src/kernels/matmul_blocking.h"
#include "src/kernels/matmul_dpbf16.h"
#include "src/kernels/ops.h"
#include "src/kernels/scratch.h"

// arm64 has its own (mxfp4_bfdot.cc).
#if !(defined(__aarch64__) && defined(__GNUC__))
namespace k3::kernels::dpbf16 {

namespace {

// Slot of element k of a block in the laid-out x: block b, vector q, lane l, half h. In-block element
// e = 16 j + 4 q + p (j: the packed block's 64-bit word, p < 4) sits in word 4 j + p of vector q, i.e.
// lane l = 2 j + p / 2, half h = p % 2. Elements [k_begin, K) of each row, in plain code; the rest of each
// row from block k_begin / kMxfp4Block on is zeroed first (k_begin a multiple of kMxfp4Block).
void LayOutMxfp4InputFrom(size_t k_begin, const float* x, size_t M, size_t K, uint16_t* xs, size_t x_stride) {
  for (size_t m = 0; m < M; ++m) {
    const float* src = x + m * K;
    uint16_t* dst = xs + m * x_stride;
    std::fill(dst + k_begin, dst + x_stride, uint16_t{0});
    for (size_t k = k_begin; k < K; ++k) {
      const size_t block = k / kMxfp4Block, in_block = k % kMxfp4Block;
      const size_t word = in_block / 16, q = (in_block % 16) / 4, p = in_block % 4;
      uint32_t bits;
      std::memcpy(&bits, src + k, sizeof(bits));
      dst[block * kMxfp4Block + q * 32 + 4 * word + p] = static_cast<uint16_t>(bits >> 16);
    }
  }
}

}  // namespace

#if K3_HAVE_DPBF16
namespace {

constexpr size_t kMaxTileM = 4;       // x rows per register tile
constexpr size_t kPanelTileM = 3;     // x rows per register tile on the decoded-panel route (RunPanelTile)
constexpr size_t kTileN = 4;          // weight rows per register tile
constexpr size_t kPrefetchMaxM = 16;  // most x rows that prefetch the rows ahead

// Tables of the decode, built once in plain code.
struct DecodeTables {
  alignas(64) uint8_t select[4][64];          // vector q: low byte of word p of each qword <- bits 16q + 4p
  alignas(64) uint16_t bf16_of_code[32];      // [code] and [16 + code]: bf16 pattern of E2M1(code)
  alignas(64) uint32_t group_of_lane[4][16];  // [i][l] = 4 i + l / 4: lane l's group in block i of four
  alignas(64) uint16_t layout_source[4][32];  // [q][o < 16] = 16 (o / 4) + 4 q + o % 4 (LayOutMxfp4Input)
  DecodeTables() {
    for (size_t q = 0; q < 4; ++q) {
      for (size_t b = 0; b < 64; ++b) {
        const size_t p = (b % 8) / 2;                         // word of the qword
        select[q][b] = static_cast<uint8_t>(16 * q + 4 * p);  // the high byte of a word is never read
      }
    }
    for (uint8_t code = 0; code < 16; ++code) {
      bf16_of_code[code] = bf16_of_code[16 + code] = FloatToBf16(E2M1ToFloat(code)).bits;
    }
    for (uint32_t i = 0; i < 4; ++i) {
      for (uint32_t l = 0; l < 16; ++l) group_of_lane[i][l] = 4 * i + l / 4;
    }
    for (size_t q = 0; q < 4; ++q) {
      for (size_t o = 0; o < 32; ++o)
        layout_source[q][o] = o < 16 ? static_cast<uint16_t>(16 * (o / 4) + 4 * q + o % 4) : 0;
    }
  }
};
const DecodeTables& Tables() {
  static const DecodeTables tables;
  return tables;
}

struct Constants {
  __m512i select[4], bf16_of_code, group_of_lane[4];
};

K3_DPBF16_VBMI_TARGET inline Constants LoadConstants() {
  const DecodeTables& t = Tables();
  Constants c;
  for (size_t q = 0; q < 4; ++q) c.select[q] = _mm512_load_si512(t.select[q]);
  c.bf16_of_code = _mm512_load_si512(t.bf16_of_code);
  for (size_t i = 0; i < 4; ++i) c.group_of_lane[i] = _mm512_load_si512(t.group_of_lane[i]);
  return c;
}

// Vector q of a block's 64 packed bytes as 32 bf16 weights (see the top of the file).
K3_DPBF16_VBMI_TARGET inline __m512bh DecodeVector(const Constants& c, __m512i packed, size_t q) {
  const __m512i nibbles = _mm512_multishift_epi64_epi8(c.select[q], packed);
  return (__m512bh)_mm512_permutexvar_epi16(nibbles, c.bf16_of_code);
}

// 2^(s - 127) of 16 E8M0 bytes (the groups of four consecutive blocks of a row: lane 4 i + g is block i,
// group g). s = 0 is the subnormal 2^-127 (bit pattern 0x00400000, which max() supplies); s = 255 is inf.
K3_DPBF16_VBMI_TARGET inline __m512 ScalesOfFourBlocks(__m128i bytes) {
  const __m512i widened = _mm512_cvtepu8_epi32(bytes);
  const __m512i bits = _mm512_max_epi32(_mm512_slli_epi32(widened, 23), _mm512_set1_epi32(0x00400000));
  return _mm512_castsi512_ps(bits);
}

// Block i's scales out of ScalesOfFourBlocks: each group's scale repeated over its four lanes.
K3_DPBF16_VBMI_TARGET inline __m512 BlockScales(const Constants& c, __m512 four_blocks, size_t i) {
  return _mm512_permutexvar_ps(c.group_of_lane[i], four_blocks);
}

// The scales of one block from its four E8M0 bytes (little-endian in `four`).
K3_DPBF16_VBMI_TARGET inline __m512 GroupScales(const Constants& c, uint32_t four) {
  return BlockScales(c, ScalesOfFourBlocks(_mm_cvtsi32_si128(static_cast<int>(four))), 0);
}

struct Tile {
  const uint16_t* x[kMaxTileM];   // laid-out x rows
  float* y[kMaxTileM];            // &y[m, n0]
  const uint8_t* packed[kTileN];  // weight rows; past N the last valid row repeats (not stored)
  const uint8_t* scales[kTileN];
  const uint8_t* next_packed[kTileN];  // rows a prefetch distance ahead (the tile's own near n_end)
  size_t n_valid;
};

// One weight row's block, decoded: the four bf16 vectors and the group scales (see the top of the file).
struct DecodedBlock {
  __m512bh w[4];
  __m512 scale;
};

// The weights of block b of tile row j: the packed bytes through a masked load (a partial last block reads
// only its groups), and the scales of its groups.
struct BlockInput {
  __m512i packed;
  uint32_t four_scales;
};
K3_DPBF16_VBMI_TARGET inline BlockInput LoadBlock(const Tile& t, size_t j, size_t b, size_t K) {
  const size_t full_blocks = K / kMxfp4Block;
  const size_t groups = b < full_blocks ? 4 : (K % kMxfp4Block) / 32;
  const __mmask64 byte_mask = groups == 4 ? ~__mmask64{0} : (__mmask64{1} << (16 * groups)) - 1;
  BlockInput in;
  in.packed = _mm512_maskz_loadu_epi8(byte_mask, t.packed[j] + b * 64);
  in.four_scales = 0;
  if (groups == 4) {
    std::memcpy(&in.four_scales, t.scales[j] + b * 4, 4);  // one 32-bit load
  } else {
    std::memcpy(&in.four_scales, t.scales[j] + b * 4, groups);
  }
  return in;
}

K3_DPBF16_VBMI_TARGET inline DecodedBlock DecodeBlock(const Constants& c, __m512i packed, __m512 scale) {
  DecodedBlock d;
  d.scale = scale;
  for (size_t q = 0; q < 4; ++q) d.w[q] = DecodeVector(c, packed, q);
  return d;
}
K3_DPBF16_VBMI_TARGET inline DecodedBlock DecodeBlock(const Constants& c, const BlockInput& in) {
  return DecodeBlock(c, in.packed, GroupScales(c, in.four_scales));
}

// Block b of the weight rows a prefetch distance ahead (t.next_packed), on its way into the cache (see the
// top of the file).
K3_DPBF16_VBMI_TARGET inline void PrefetchRowsAhead(const Tile& t, size_t b) {
  for (size_t j = 0; j < kTileN; ++j)
    _mm_prefetch(reinterpret_cast<const char*>(t.next_packed[j] + b * 64), _MM_HINT_T0);
}

// acc += (x . w over the block's four vectors) * scale: the one arithmetic sequence of every route.
K3_DPBF16_VBMI_TARGET inline __m512 AccumulateBlock(__m512 acc, const uint16_t* x, const DecodedBlock& d) {
  __m512 dot = _mm512_setzero_ps();
  for (size_t q = 0; q < 4; ++q)
    dot = _mm512_dpbf16_ps(dot, (__m512bh)_mm512_loadu_si512(x + q * 32), d.w[q]);
  return _mm512_fmadd_ps(dot, d.scale, acc);
}

// A kM x kTileN tile over all num_blocks blocks of K, each block decoded here as it is read (the decode
// route, M <= kMaxTileM).
template <size_t kM>
K3_DPBF16_VBMI_TARGET inline void RunTile(const Constants& c, const Tile& t, size_t num_blocks, size_t K) {
  __m512 acc[kM][kTileN];
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kTileN; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  // Full blocks four at a time: their scales come from one 16-byte load a row.
  const size_t full_end = std::min(num_blocks, K / kMxfp4Block);
  size_t b = 0;
  for (; b + 4 <= full_end; b += 4) {
    __m512 four_blocks[kTileN];
    for (size_t j = 0; j < kTileN; ++j) {
      four_blocks[j] =
          ScalesOfFourBlocks(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.scales[j] + b * 4)));
    }
    for (size_t i4 = 0; i4 < 4; ++i4) {
      PrefetchRowsAhead(t, b + i4);
      for (size_t j = 0; j < kTileN; ++j) {
        const DecodedBlock d = DecodeBlock(c, _mm512_loadu_si512(t.packed[j] + (b + i4) * 64),
                                           BlockScales(c, four_blocks[j], i4));
        for (size_t i = 0; i < kM; ++i) {
          acc[i][j] = AccumulateBlock(acc[i][j], t.x[i] + (b + i4) * kMxfp4Block, d);
        }
      }
    }
  }
  for (; b < num_blocks; ++b) {
    PrefetchRowsAhead(t, b);
    for (size_t j = 0; j < kTileN; ++j) {
      const DecodedBlock d = DecodeBlock(c, LoadBlock(t, j, b, K));
      for (size_t i = 0; i < kM; ++i) acc[i][j] = AccumulateBlock(acc[i][j], t.x[i] + b * kMxfp4Block, d);
    }
  }
  for (size_t i = 0; i < kM; ++i) StoreSumsOfLanes4(acc[i], t.n_valid, t.y[i]);
}

// The decoded-panel route of a kM x kTileN tile (kM <= kPanelTileM), over all num_blocks blocks of the panel
// [kTileN][num_blocks]. A block's x vectors of the kM rows (4 kM registers) stay in registers while the four
// weight rows go by: per block 4 kM + 20 loads for 16 kM dot products, against 16 kM + 20 when each row's
// dot is formed with its x re-read (RunTile). Each y[m, n] meets the same vectors in the same order as in
// AccumulateBlock (a dot product over the block's four vectors from zero, then one FMA with the scale).
template <size_t kM>
K3_DPBF16_VBMI_TARGET inline void RunPanelTile(const Tile& t, size_t num_blocks,
                                               const DecodedBlock* decoded) {
  __m512 acc[kM][kTileN];
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kTileN; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < num_blocks; ++b) {
    __m512bh xv[kM][4];
    for (size_t i = 0; i < kM; ++i) {
      for (size_t q = 0; q < 4; ++q)
        xv[i][q] = (__m512bh)_mm512_loadu_si512(t.x[i] + b * kMxfp4Block + q * 32);
    }
    for (size_t j = 0; j < kTileN; ++j) {
      const DecodedBlock& d = decoded[j * num_blocks + b];
      __m512 dot[kM];
      for (size_t i = 0; i < kM; ++i) dot[i] = _mm512_setzero_ps();
      for (size_t q = 0; q < 4; ++q) {
        const __m512bh w = d.w[q];
        for (size_t i = 0; i < kM; ++i) dot[i] = _mm512_dpbf16_ps(dot[i], xv[i][q], w);
      }
      for (size_t i = 0; i < kM; ++i) acc[i][j] = _mm512_fmadd_ps(dot[i], d.scale, acc[i][j]);
    }
  }
  for (size_t i = 0; i < kM; ++i) StoreSumsOfLanes4(acc[i], t.n_valid, t.y[i]);
}

// The whole blocks of each row: 128 fp32 values become four vectors of 32 bf16 patterns (their top halves,
// in order: vector v holds elements 32 v .. 32 v + 31), and output vector q takes its words 0-15 from
// vectors 0 and 1 and its words 16-31 from vectors 2 and 3, through the same two-source word permute
// (element 16 (o / 4) + 4 q + o % 4 of the pair for word o; see LayOutMxfp4InputFrom).
K3_DPBF16_VBMI_TARGET void LayOutMxfp4WholeBlocks(const float* x, size_t M, size_t K, uint16_t* xs,
                                                  size_t x_stride) {
  const DecodeTables& tables = Tables();
  __m512i source[4];
  for (size_t q = 0; q < 4; ++q) source[q] = _mm512_load_si512(tables.layout_source[q]);
  const size_t full_blocks = K / kMxfp4Block;
  for (size_t m = 0; m < M; ++m) {
    const float* src = x + m * K;
    uint16_t* dst = xs + m * x_stride;
    for (size_t b = 0; b < full_blocks; ++b) {
      const float* block = src + b * kMxfp4Block;
      __m512i in[4];
      for (size_t v = 0; v < 4; ++v) {
        const __m256i low = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_loadu_si512(block + 32 * v), 16));
        const __m256i high =
            _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_loadu_si512(block + 32 * v + 16), 16));
        in[v] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
      }
      for (size_t q = 0; q < 4; ++q) {
        const __m512i first = _mm512_permutex2var_epi16(in[0], source[q], in[1]);
        const __m512i second = _mm512_permutex2var_epi16(in[2], source[q], in[3]);
        _mm512_storeu_si512(dst + b * kMxfp4Block + 32 * q,
                            _mm512_inserti64x4(first, _mm512_castsi512_si256(second), 1));
      }
    }
  }
}

}  // namespace

K3_DPBF16_VBMI_TARGET void Mxfp4RowBlock(const uint16_t* xs, size_t M, size_t x_stride, size_t K,
                                         const uint8_t* packed, const uint8_t* scales, float* y, size_t N,
                                         size_t n_begin, size_t n_end) {
  if (M == 0 || n_begin >= n_end) return;
  const Constants c = LoadConstants();
  const size_t num_blocks = (K + kMxfp4Block - 1) / kMxfp4Block;
  const size_t rows_per_m_block = XRowsPerBlock(M, x_stride * sizeof(uint16_t));
  const size_t n_tiles = (n_end - n_begin + kTileN - 1) / kTileN;
  // More x rows than one tile: each weight panel is decoded once per block of x rows.
  const bool decode_once = M > kMaxTileM;
  // The rows ahead are prefetched up to kPrefetchMaxM x rows (see the top).
  const bool prefetch = M <= kPrefetchMaxM;
  const size_t ahead = PrefetchDistanceRows(kTileN, K / 2);  // counted in packed bytes
  DecodedBlock* panel = decode_once ? reinterpret_cast<DecodedBlock*>(ThreadScratch(
                                          ScratchSlot::kMatMulDecodedWeights,
                                          kTileN * num_blocks * sizeof(DecodedBlock) / sizeof(float)))
                                    : nullptr;
  for (size_t m_block = 0; m_block < M; m_block += rows_per_m_block) {
    const size_t m_block_end = std::min(M, m_block + rows_per_m_block);
    for (size_t nt = 0; nt < n_tiles; ++nt) {
      const size_t n0 = n_begin + nt * kTileN;
      Tile t;
      t.n_valid = std::min(kTileN, n_end - n0);
      for (size_t j = 0; j < kTileN; ++j) {
        const size_t n = n0 + std::min(j, t.n_valid - 1);
        t.packed[j] = packed + n * (K / 2);
        t.scales[j] = scales + n * (K / 32);
        t.next_packed[j] = packed + PrefetchRow(n0, ahead, j, n_end, n) * (K / 2);
      }
      if (prefetch && n0 + ahead < n_end) {  // the scales of the rows whose packed bytes are prefetched
        const uint8_t* next_scales = scales + (n0 + ahead) * (K / 32);
        const size_t rows = std::min(kTileN, n_end - n0 - ahead);
        for (size_t offset = 0; offset < rows * (K / 32); offset += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(next_scales + offset), _MM_HINT_T0);
        }
      }
      if (decode_once) {
        for (size_t j = 0; j < kTileN; ++j) {
          for (size_t b = 0; b < num_blocks; ++b) {
            if (prefetch) _mm_prefetch(reinterpret_cast<const char*>(t.next_packed[j] + b * 64), _MM_HINT_T0);
            panel[j * num_blocks + b] = DecodeBlock(c, LoadBlock(t, j, b, K));
          }
        }
      }
      const size_t tile_m = decode_once ? kPanelTileM : kMaxTileM;
      for (size_t m0 = m_block; m0 < m_block_end; m0 += tile_m) {
        const size_t rows = std::min(tile_m, m_block_end - m0);
        for (size_t i = 0; i < rows; ++i) {
          t.x[i] = xs + (m0 + i) * x_stride;
          t.y[i] = y + (m0 + i) * N + n0;
        }
        if (decode_once) {
          static_assert(kPanelTileM == 3, "a case per tile height");
          switch (rows) {
            case 1:
              RunPanelTile<1>(t, num_blocks, panel);
              break;
            case 2:
              RunPanelTile<2>(t, num_blocks, panel);
              break;
            default:
              RunPanelTile<kPanelTileM>(t, num_blocks, panel);
              break;
          }
          continue;
        }
        switch (rows) {
          case 1:
            RunTile<1>(c, t, num_blocks, K);
            break;
          case 2:
            RunTile<2>(c, t, num_blocks, K);
            break;
          case 3:
            RunTile<3>(c, t, num_blocks, K);
            break;
          default:
            RunTile<4>(c, t, num_blocks, K);
            break;
        }
      }
    }
  }
}

void LayOutMxfp4Input(const float* x, size_t M, size_t K, uint16_t* xs, size_t x_stride) {
  if (!Mxfp4Supported()) {
    LayOutMxfp4InputFrom(0, x, M, K, xs, x_stride);
    return;
  }
  LayOutMxfp4WholeBlocks(x, M, K, xs, x_stride);
  LayOutMxfp4InputFrom(K / kMxfp4Block * kMxfp4Block, x, M, K, xs, x_stride);
}

#else  // no AVX512_BF16 code in this build

void LayOutMxfp4Input(const float* x, size_t M, size_t K, uint16_t* xs, size_t x_stride) {
  LayOutMxfp4InputFrom(0, x, M, K, xs, x_stride);
}

void Mxfp4RowBlock(const uint16_t*, size_t, size_t, size_t, const uint8_t*, const uint8_t*, float*, size_t,
                   size_t, size_t) {}

#endif

}  // namespace k3::kernels::dpbf16
#endif  // !__aarch64__
