// Highway bodies of the matmul kernels (MatMulBf16, MatMulF32, MatMulMxfp4 of ops.h), compiled once per
// SIMD target by matmul.cc through hwy/foreach_target.h. Model code never includes this file.
//
// On a CPU with bf16 dot products (AVX512_BF16, arm64 BFDOT; matmul_dpbf16.h) the rows of x that hold bf16
// values of bf16 and MXFP4 jobs are computed there instead; MatMulGroupImpl sorts rows between the two paths.
// kMxfp4Q8 jobs quantise x in the layout step and run mxfp4_q8.h's int8 kernels (their own dispatch).
//
// Shape: y[M, N] = x[M, K] @ W[N, K]^T. Every call is a group of such jobs (MatMulGroup; the single
// MatMul* calls are groups of one) run under one fork-join. Work is split over blocks of output rows n of
// every job (one pool task each);
// inside a task a register tile of up to kMaxTileM x rows by kTileN = 4 weight rows keeps
// kMaxTileM * 4 vector accumulators, so each weight chunk is decoded once and used for every x row of
// the tile. Every tile runs over the whole of K with its accumulators in registers; many x rows (prefill,
// batched experts) are taken in blocks of rows that stay in L2 (matmul_blocking.h).
//
// Numerics: each y[m, n] is one vector accumulator fed chunk by chunk over K in the same order whatever
// M, the tile shape, the blocks of x rows or the thread count, then summed across lanes (x rows never share
// a vector, and tiles only change which accumulators live in registers together). A row of x therefore
// gives bit-identical results alone or in a batch for a given target (design.md: batching must not
// change results).
//
// Layout: K is cut into chunks of kVectorsPerChunk * L elements (L = float lanes, capped at 16). A weight
// policy turns one chunk of one weight row into kVectorsPerChunk fp32 vectors; SourceOf(i) says which
// element of the chunk lands in slot i. x is copied once per call into a scratch buffer laid out to
// match, zero-padded to whole chunks, so the inner loop is plain FMAs. For bf16 and MXFP4 (2 vectors per
// chunk) the first vector holds the even elements and the second the odd ones: two bf16 share a 32-bit
// lane and two E2M1 codes share a byte, so the split costs no shuffles. fp32 chunks are plain. On AVX2
// and NEON an MXFP4 chunk is a whole 32-element group decoded with byte shuffles (Mxfp4GroupWeights,
// Mxfp4HalfWeights), dotted unscaled, and the group scale is applied once to the chunk's dot product.
//
// Small batches (up to kPrefetchMaxM x rows; MXFP4 from one row, bf16 and fp32 from three) prefetch: the
// first x tile of each weight tile prefetches, chunk by chunk, the rows a prefetch distance ahead
// (matmul_blocking.h). A weight tile's rows are short streams (an MXFP4 row at K = 1024 is 512 bytes) that
// the hardware prefetcher does not ramp up on. MXFP4 weight tiles that meet several x tiles (kPanelMinM x
// rows) are decoded once into a per-thread panel that every x tile then reads (DecodedPanel); on AVX2, from
// kTallMinM x rows, tiles of 4 x rows by 2 weight rows decode each weight row once per 4 x rows instead
// (RunTallTiles), which was faster than the panel at every M measured.
//
// Overlap (matmul_overlap.h): at decode sizes a group's MXFP4 tasks are bound by their decode and its bf16
// tasks by memory, so the pool runs units of MXFP4 tasks followed by a bf16 task, and the MXFP4 tiles
// prefetch that task's weights into L2 as they go (TileRows::other_*). Only the order changes.

#if defined(K3_KERNELS_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef K3_KERNELS_MATMUL_INL_H_
#undef K3_KERNELS_MATMUL_INL_H_
#else
#define K3_KERNELS_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "src/base/bf16.h"
#include "src/base/thread_pool.h"
#include "src/kernels/matmul_blocking.h"
#include "src/kernels/matmul_dpbf16.h"
#include "src/kernels/matmul_overlap.h"
#include "src/kernels/mxfp4_q8.h"
#include "src/kernels/mxfp4_tables.h"
#include "src/kernels/ops.h"
#include "src/kernels/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace k3::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// HWY_SCALAR (the fallback g++ < 12.3 gets instead of EMU128, for CPUs without SSE4) has one lane and no
// narrowing descriptors: it runs the scalar references, one output element at a time, over the pool.
template <class DotOne>
void ScalarMatMul(size_t M, size_t N, ThreadPool* pool, const DotOne& dot_one) {
  constexpr size_t kRowsPerTask = 16;
  const size_t num_tasks = (N + kRowsPerTask - 1) / kRowsPerTask;
  auto run_task = [&](size_t task, size_t /*worker*/) {
    for (size_t m = 0; m < M; ++m) {
      for (size_t n = task * kRowsPerTask; n < std::min(N, (task + 1) * kRowsPerTask); ++n) dot_one(m, n);
    }
  };
  if (pool == nullptr) {
    for (size_t task = 0; task < num_tasks; ++task) run_task(task, 0);
  } else {
    pool->ParallelFor(num_tasks, run_task);
  }
}

void MatMulBf16Impl(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y, ThreadPool* pool) {
  ScalarMatMul(M, N, pool,
               [&](size_t m, size_t n) { scalar::MatMulBf16(x + m * K, 1, K, W + n * K, 1, y + m * N + n); });
}

void MatMulF32Impl(const float* x, size_t M, size_t K, const float* W, size_t N, float* y, ThreadPool* pool) {
  ScalarMatMul(M, N, pool,
               [&](size_t m, size_t n) { scalar::MatMulF32(x + m * K, 1, K, W + n * K, 1, y + m * N + n); });
}

void MatMulMxfp4Impl(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales,
                     size_t N, float* y, ThreadPool* pool) {
  HWY_ASSERT(K % 32 == 0);
  ScalarMatMul(M, N, pool, [&](size_t m, size_t n) {
    scalar::MatMulMxfp4(x + m * K, 1, K, packed + n * (K / 2), scales + n * (K / 32), 1, y + m * N + n);
  });
}

void MatMulGroupImpl(const MatMulJob* jobs, size_t num_jobs, ThreadPool* pool) {
  for (size_t j = 0; j < num_jobs; ++j) {
    const MatMulJob& job = jobs[j];
    switch (job.kind) {
      case WeightKind::kBf16:
        MatMulBf16Impl(job.x, job.M, job.K, job.bf16_weights, job.N, job.y, pool);
        break;
      case WeightKind::kF32:
        MatMulF32Impl(job.x, job.M, job.K, job.f32_weights, job.N, job.y, pool);
        break;
      case WeightKind::kMxfp4:
        MatMulMxfp4Impl(job.x, job.M, job.K, job.packed, job.scales, job.N, job.y, pool);
        break;
      case WeightKind::kMxfp4Q8: {
        std::vector<int8_t> values(job.M * job.K);
        std::vector<float> scales(job.M * job.K / kQ8Group);
        QuantizeRowsQ8(job.x, job.M, job.K, values.data(), scales.data());
        MatMulMxfp4Q8(values.data(), scales.data(), job.M, job.K, job.packed, job.scales, job.N, job.y, pool);
        break;
      }
    }
  }
}

#else  // SIMD targets

// At most 16 float lanes, so that an MXFP4 group (32 elements) is a whole number of chunks.
using DMatMul = hn::CappedTag<float, 16>;
using VMatMul = hn::Vec<DMatMul>;

constexpr size_t kTileN = 4;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr size_t kMaxTileM = 4;  // 16 accumulators + 8 x vectors + weights fit in 32 registers
constexpr bool kXInRegisters = true;
#else
constexpr size_t kMaxTileM = 2;  // 16 registers: 8 accumulators + weights; x is read from L1
constexpr bool kXInRegisters = false;
#endif
constexpr size_t kDecodeMaxM = 16;    // up to here a pool task streams weight rows (decode, small batches)
constexpr size_t kPrefetchMaxM = 16;  // most x rows whose tiles prefetch the weight rows ahead
// Fewest x rows for which an MXFP4 weight tile is decoded once into a panel (DecodedPanel) rather than by
// every x tile (not on AVX2: RunTallTiles). Measured on AVX2 before its tall tiles (Zen 3, one thread,
// alternating call for call, 2-row tiles): the panel took 1.4x the time at M = 3 (two x tiles), the same at
// 6, 5-19 % less at 8 and 24-37 % less from 12 rows on.
constexpr size_t kPanelMinM = 4 * kMaxTileM;
constexpr size_t kMaxTileRows = 4;  // x rows of the tallest tile of any shape (TileRows, RunTileOfHeight)

// ---- weight policies: chunk c of weight row n -> kVectorsPerChunk fp32 vectors (+ the chunk scale) --

// bf16 weights [N, K]: a chunk of 2L bf16 is read as L 32-bit lanes; the low half of lane i is element
// 2i (little endian), the high half element 2i+1. Widening bf16 to fp32 is a 16-bit shift.
struct Bf16Weights {
  static constexpr size_t kVectorsPerChunk = 2;
  static constexpr bool kScalePerChunk = false;
  static constexpr size_t kPrefetchMinM = 3;
  // Element of the chunk held in x scratch slot i: even elements first, then odd ones.
  static size_t SourceOf(size_t i, size_t L) { return i < L ? 2 * i : 2 * (i - L) + 1; }
  const uint16_t* w;  // [N, K]
  size_t K;
  size_t full_chunks;  // chunks lying entirely inside a row

  // Chunk c of weight row n (the loads and the prefetches), and the row's scales (none).
  const uint16_t* ChunkAddress(size_t n, size_t c) const { return w + n * K + c * 2 * hn::Lanes(DMatMul()); }
  const uint8_t* ScaleRow(size_t /*n*/) const { return nullptr; }
  size_t RowBytes() const { return K * sizeof(uint16_t); }

  HWY_INLINE void Widen(DMatMul df, hn::Vec<hn::RebindToUnsigned<DMatMul> > pairs, VMatMul (&out)[2]) const {
    const hn::RebindToUnsigned<DMatMul> du32;
    out[0] = hn::BitCast(df, hn::ShiftLeft<16>(pairs));
    out[1] = hn::BitCast(df, hn::And(pairs, hn::Set(du32, 0xFFFF0000u)));
  }
  HWY_INLINE VMatMul Load(DMatMul df, size_t n, size_t c, VMatMul (&out)[2]) const {
    const hn::RebindToUnsigned<DMatMul> du32;
    const hn::Repartition<uint16_t, decltype(du32)> du16;
    Widen(df, hn::BitCast(du32, hn::LoadU(du16, ChunkAddress(n, c))), out);
    return out[0];  // no scale
  }
  // The last, partial chunk of a row: copied into a zero-padded buffer so nothing past the row is read.
  HWY_INLINE VMatMul LoadTail(DMatMul df, size_t n, size_t c, VMatMul (&out)[2]) const {
    const hn::RebindToUnsigned<DMatMul> du32;
    const hn::Repartition<uint16_t, decltype(du32)> du16;
    const size_t begin = c * 2 * hn::Lanes(df);
    HWY_ALIGN uint16_t buffer[2 * hn::MaxLanes(DMatMul())] = {};
    std::memcpy(buffer, ChunkAddress(n, c), (K - begin) * sizeof(uint16_t));
    Widen(df, hn::BitCast(du32, hn::Load(du16, buffer)), out);
    return out[0];  // no scale
  }
};

// fp32 weights [N, K]: a chunk is two plain vectors.
struct F32Weights {
  static constexpr size_t kVectorsPerChunk = 2;
  static constexpr bool kScalePerChunk = false;
  static constexpr size_t kPrefetchMinM = 3;
  static size_t SourceOf(size_t i, size_t /*L*/) { return i; }  // plain chunk
  const float* w;                                               // [N, K]
  size_t K;
  size_t full_chunks;

  const float* ChunkAddress(size_t n, size_t c) const { return w + n * K + c * 2 * hn::Lanes(DMatMul()); }
  const uint8_t* ScaleRow(size_t /*n*/) const { return nullptr; }
  size_t RowBytes() const { return K * sizeof(float); }

  HWY_INLINE VMatMul Load(DMatMul df, size_t n, size_t c, VMatMul (&out)[2]) const {
    const size_t L = hn::Lanes(df);
    const float* p = ChunkAddress(n, c);
    out[0] = hn::LoadU(df, p);
    out[1] = hn::LoadU(df, p + L);
    return out[0];  // no scale
  }
  HWY_INLINE VMatMul LoadTail(DMatMul df, size_t n, size_t c, VMatMul (&out)[2]) const {
    const size_t L = hn::Lanes(df);
    const size_t begin = c * 2 * L;
    HWY_ALIGN float buffer[2 * hn::MaxLanes(DMatMul())] = {};
    std::memcpy(buffer, ChunkAddress(n, c), (K - begin) * sizeof(float));
    out[0] = hn::Load(df, buffer);
    out[1] = hn::Load(df, buffer + L);
    return out[0];  // no scale
  }
};

// E2M1 code -> value, low 4 bits (spec §3.3).
alignas(64) static constexpr float kE2M1Values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// MXFP4 weights (spec §3.3): packed [N, K/2] (low nibble = even element), scales [N, K/32]. A chunk of
// 2L elements is L bytes: low nibbles give `first` (even elements), high nibbles `second` (odd). The
// E2M1 table is multiplied by the group's scale once, then indexed by the codes, so each element costs
// one lane permute. K % 32 == 0, so every chunk is full and inside one scale group. Used on every target
// but AVX2 and NEON (see Mxfp4GroupWeights, Mxfp4HalfWeights).
struct Mxfp4Weights {
  static constexpr size_t kVectorsPerChunk = 2;
  static constexpr bool kScalePerChunk = false;
  static constexpr size_t kPrefetchMinM = 1;
  // Element of the chunk held in x scratch slot i: even elements first, then odd ones.
  static size_t SourceOf(size_t i, size_t L) { return i < L ? 2 * i : 2 * (i - L) + 1; }
  const uint8_t* packed;  // [N, K/2]
  const uint8_t* scales;  // [N, K/32]
  size_t K;
  size_t full_chunks;
  const float* scale_values;  // Mxfp4Tables().e8m0

  const uint8_t* ChunkAddress(size_t n, size_t c) const {
    return packed + n * (K / 2) + c * hn::Lanes(DMatMul());
  }
  const uint8_t* ScaleRow(size_t n) const { return scales + n * (K / 32); }
  size_t RowBytes() const { return K / 2; }

  HWY_INLINE VMatMul Load(DMatMul df, size_t n, size_t c, VMatMul (&out)[2]) const {
    const size_t L = hn::Lanes(df);
    const hn::RebindToUnsigned<DMatMul> du32;
    const hn::Rebind<uint8_t, DMatMul> du8;
    VMatMul& first = out[0];
    VMatMul& second = out[1];
    const auto codes = hn::PromoteTo(du32, hn::LoadU(du8, ChunkAddress(n, c)));
    const auto low = hn::And(codes, hn::Set(du32, 0xFu));
    const auto high = hn::ShiftRight<4>(codes);
    const auto scale = hn::Set(df, scale_values[ScaleRow(n)[(c * 2 * L) / 32]]);
    if constexpr (hn::MaxLanes(DMatMul()) >= 16) {
      // The whole signed table fits one vector.
      const VMatMul table = hn::Mul(hn::Load(df, kE2M1Values), scale);
      first = hn::TableLookupLanes(table, hn::IndicesFromVec(df, low));
      second = hn::TableLookupLanes(table, hn::IndicesFromVec(df, high));
    } else if constexpr (hn::MaxLanes(DMatMul()) >= 8) {
      // Magnitudes from an 8-entry table, then the sign bit (code bit 3 -> fp32 bit 31).
      const VMatMul table = hn::Mul(hn::LoadU(df, kE2M1Values), scale);
      first = Signed(df, hn::TableLookupLanes(table, hn::IndicesFromVec(df, hn::And(low, hn::Set(du32, 7u)))),
                     low);
      second = Signed(
          df, hn::TableLookupLanes(table, hn::IndicesFromVec(df, hn::And(high, hn::Set(du32, 7u)))), high);
    } else {
      first = hn::Mul(Magnitude(df, low), scale);
      second = hn::Mul(Magnitude(df, high), scale);
      first = Signed(df, first, low);
      second = Signed(df, second, high);
    }
    return scale;  // already applied (kScalePerChunk is false)
  }
  HWY_INLINE VMatMul LoadTail(DMatMul df, size_t n, size_t c, VMatMul (&out)[2]) const {
    return Load(df, n, c, out);  // never called: K % 32 == 0 leaves no partial chunk
  }

 private:
  template <class VU>
  static HWY_INLINE VMatMul Signed(DMatMul df, VMatMul magnitude, VU codes) {
    const hn::RebindToUnsigned<DMatMul> du32;
    return hn::Xor(magnitude, hn::BitCast(df, hn::ShiftLeft<28>(hn::And(codes, hn::Set(du32, 8u)))));
  }
  // Narrow targets (fewer than 8 lanes): the magnitude of code m (bits 0..2) computed from its bits.
  // For m >= 2 the fp32 pattern of {1, 1.5, 2, 3, 4, 6} is (m + 252) << 22; m = 0, 1 give m / 2.
  template <class VU>
  static HWY_INLINE VMatMul Magnitude(DMatMul df, VU codes) {
    const hn::RebindToUnsigned<DMatMul> du32;
    const hn::RebindToSigned<DMatMul> di32;
    const auto m = hn::And(codes, hn::Set(du32, 7u));
    const VMatMul normal = hn::BitCast(df, hn::ShiftLeft<22>(hn::Add(m, hn::Set(du32, 252u))));
    const VMatMul small = hn::Mul(hn::ConvertTo(df, hn::BitCast(di32, m)), hn::Set(df, 0.5f));
    const auto is_small = hn::RebindMask(df, hn::Lt(hn::BitCast(di32, m), hn::Set(di32, 2)));
    return hn::IfThenElse(is_small, small, normal);
  }
};

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_NEON
// Where the whole-group MXFP4 policies (Mxfp4GroupWeights on AVX2, Mxfp4HalfWeights on NEON) find a
// group: chunk c of weight row n is scale group c (16 packed bytes), decoded through Mxfp4Tables().
struct Mxfp4GroupRows {
  const uint8_t* packed;  // [N, K/2]
  const uint8_t* scales;  // [N, K/32]
  size_t K;
  size_t full_chunks;
  const Mxfp4LookupTables* tables;  // Mxfp4Tables()

  const uint8_t* ChunkAddress(size_t n, size_t c) const { return packed + n * (K / 2) + c * 16; }
  const uint8_t* ScaleRow(size_t n) const { return scales + n * (K / 32); }
  size_t RowBytes() const { return K / 2; }
  float GroupScale(size_t n, size_t c) const { return tables->e8m0[ScaleRow(n)[c]]; }
};
#endif

#if HWY_TARGET == HWY_AVX2
// MXFP4 on AVX2, which has no 16-entry lane permute: a chunk is one whole group (32 elements, 16
// bytes, 4 vectors). The 16 bytes are loaded into both 128-bit halves; one variable shift (0 bits in the
// low half, 4 in the high one) and a mask leave the even elements' codes in the low half and the odd ones'
// in the high half. Two byte shuffles look up the high and low byte of each code's bf16 pattern (exact:
// E2M1 values are bf16), two interleaves pair them into bf16 words, and each 32-bit lane of those holds
// two bf16 that widen to fp32 as Bf16Weights' do (a shift, a mask): four shuffles per group (the decode
// before took nine, widening by interleaving with zeros). Vector v, lane 4h + d (h: the half, d < 4)
// holds element kBase[v] + 4d + h; x is laid out to match. The group scale multiplies the chunk's dot
// product once.
struct Mxfp4GroupWeights : Mxfp4GroupRows {
  static constexpr size_t kVectorsPerChunk = 4;
  static constexpr bool kScalePerChunk = true;
  static constexpr size_t kPrefetchMinM = 1;
  static size_t SourceOf(size_t i, size_t /*L*/) {
    constexpr size_t kBase[4] = {0, 2, 16, 18};
    const size_t lane = i % 8;
    return kBase[i / 8] + 4 * (lane % 4) + lane / 4;
  }
  // Returns the group's scale; `out` holds the unscaled E2M1 values.
  HWY_INLINE VMatMul Load(DMatMul df, size_t n, size_t c, VMatMul (&out)[4]) const {
    const hn::Full256<uint8_t> d8;
    const hn::Full256<uint32_t> d32;
    const auto bytes = hn::BitCast(d32, hn::LoadDup128(d8, ChunkAddress(n, c)));
    alignas(32) static constexpr uint32_t kShifts[8] = {0, 0, 0, 0, 4, 4, 4, 4};
    const auto shift = hn::Load(d32, kShifts);
    const auto codes = hn::And(hn::BitCast(d8, hn::operator>>(bytes, shift)), hn::Set(d8, uint8_t{0x0F}));
    const auto high = hn::TableLookupBytes(hn::LoadDup128(d8, tables->bf16_high), codes);
    const auto low = hn::TableLookupBytes(hn::LoadDup128(d8, tables->bf16_low), codes);
    const auto words_lower = hn::BitCast(d32, hn::InterleaveLower(d8, low, high));  // bytes p = 0..7
    const auto words_upper = hn::BitCast(d32, hn::InterleaveUpper(d8, low, high));  // bytes p = 8..15
    const auto odd_mask = hn::Set(d32, 0xFFFF0000u);
    out[0] = hn::BitCast(df, hn::ShiftLeft<16>(words_lower));
    out[1] = hn::BitCast(df, hn::And(words_lower, odd_mask));
    out[2] = hn::BitCast(df, hn::ShiftLeft<16>(words_upper));
    out[3] = hn::BitCast(df, hn::And(words_upper, odd_mask));
    return hn::Set(df, GroupScale(n, c));
  }
  HWY_INLINE VMatMul LoadTail(DMatMul df, size_t n, size_t c, VMatMul (&out)[4]) const {
    return Load(df, n, c, out);  // never called: K % 32 == 0 leaves no partial chunk
  }
};
#endif  // HWY_TARGET == HWY_AVX2

#if HWY_TARGET == HWY_NEON
// MXFP4 on NEON (4 fp32 lanes, so the 16-entry lane permute of wider targets is not there; the arithmetic
// decode of Mxfp4Weights takes about a dozen operations per 4 values): a chunk is one whole group (32
// elements, 16 bytes, 8 vectors). A mask and a shift split the bytes into the even elements' codes and the
// odd ones'; a byte shuffle (TBL) of each gives the high bytes of the codes' fp16 patterns (exact: E2M1
// values are fp16 with a zero low byte); interleaving with zero bytes makes them fp16 words, and each half
// of those widens to fp32 in one conversion (FCVTL): 16 instructions per group for 32 values. Vector v,
// lane l holds element 2 (4 (v % 4) + l) + v / 4: the even elements in vectors 0-3, the odd ones in 4-7;
// x is laid out to match. The group scale multiplies the chunk's dot product once.
struct Mxfp4HalfWeights : Mxfp4GroupRows {
  static constexpr size_t kVectorsPerChunk = 8;
  static constexpr bool kScalePerChunk = true;
  static constexpr size_t kPrefetchMinM = 1;
  static size_t SourceOf(size_t i, size_t L) {
    const size_t v = i / L;
    return 2 * (L * (v % 4) + i % L) + v / 4;
  }
  // Returns the group's scale; `out` holds the unscaled E2M1 values.
  HWY_INLINE VMatMul Load(DMatMul df, size_t n, size_t c, VMatMul (&out)[8]) const {
    const hn::Full128<uint8_t> d8;
    const auto bytes = hn::LoadU(d8, ChunkAddress(n, c));
    const auto table = hn::Load(d8, tables->fp16_high);
    Widen<0>(hn::TableLookupBytes(table, hn::And(bytes, hn::Set(d8, uint8_t{0x0F}))), out);
    Widen<4>(hn::TableLookupBytes(table, hn::ShiftRight<4>(bytes)), out);
    return hn::Set(df, GroupScale(n, c));
  }
  HWY_INLINE VMatMul LoadTail(DMatMul df, size_t n, size_t c, VMatMul (&out)[8]) const {
    return Load(df, n, c, out);  // never called: K % 32 == 0 leaves no partial chunk
  }

 private:
  // 16 fp16 high bytes (lane p) -> out[kFirst + q], q < 4, whose lane l is from byte 4q + l. NEON
  // intrinsics: Highway 1.0.3 has no conversion of an upper half, and LowerHalf / UpperHalf + PromoteTo
  // compiled to an extra move per upper half instead of FCVTL2.
  template <size_t kFirst>
  static HWY_INLINE void Widen(hn::Vec<hn::Full128<uint8_t> > high_bytes, VMatMul (&out)[8]) {
    const uint8x16_t zero = vdupq_n_u8(0);
    const float16x8_t lower = vreinterpretq_f16_u8(vzip1q_u8(zero, high_bytes.raw));  // bytes 0..7
    const float16x8_t upper = vreinterpretq_f16_u8(vzip2q_u8(zero, high_bytes.raw));  // bytes 8..15
    out[kFirst + 0] = VMatMul(vcvt_f32_f16(vget_low_f16(lower)));
    out[kFirst + 1] = VMatMul(vcvt_high_f32_f16(lower));
    out[kFirst + 2] = VMatMul(vcvt_f32_f16(vget_low_f16(upper)));
    out[kFirst + 3] = VMatMul(vcvt_high_f32_f16(upper));
  }
};
#endif  // HWY_TARGET == HWY_NEON

// ---- register tile -------------------------------------------------------------------------------

struct TileRows {
  const float* x_rows[kMaxTileRows];  // x scratch rows, chunk layout
  float* y_rows[kMaxTileRows];        // &y[m, n0]
  size_t n_rows[kTileN];              // weight rows; past N the last valid row repeats (not stored)
  size_t next_rows[kTileN];           // rows a prefetch distance ahead (the tile's own near n_end)
  size_t n_valid;                     // 1..kTileN
  // Another task's weights this tile pulls into cache as it goes (matmul_overlap.h): `other_lines` cache
  // lines after each chunk, from other_begin up to other_end. other_lines 0: none.
  const char* other_begin = nullptr;
  const char* other_end = nullptr;
  size_t other_lines = 0;
};

// acc + x . w over one chunk. Weights with a scale per chunk (MXFP4 groups) return unscaled values
// and the scale: the chunk's dot product is formed first and scaled once, acc + (x . w) * scale.
template <class Weights>
HWY_INLINE VMatMul AddChunkDot(const VMatMul (&x)[Weights::kVectorsPerChunk],
                               const VMatMul (&w)[Weights::kVectorsPerChunk], VMatMul scale, VMatMul acc) {
  constexpr size_t kV = Weights::kVectorsPerChunk;
  if constexpr (Weights::kScalePerChunk) {
    VMatMul dot = hn::Mul(x[0], w[0]);
    for (size_t v = 1; v < kV; ++v) dot = hn::MulAdd(x[v], w[v], dot);
    return hn::MulAdd(dot, scale, acc);
  } else {
    (void)scale;
    for (size_t v = 0; v < kV; ++v) acc = hn::MulAdd(x[v], w[v], acc);
    return acc;
  }
}

template <size_t kM, size_t kN, bool kTail, bool kPrefetch, class Weights>
HWY_INLINE void AccumulateChunk(DMatMul df, const Weights& w, const TileRows& t, size_t c,
                                VMatMul (&acc)[kM][kN]) {
  constexpr size_t kV = Weights::kVectorsPerChunk;
  const size_t L = hn::Lanes(df);
  const size_t offset = c * kV * L;
  VMatMul xv[kXInRegisters ? kM : 1][kV];
  if constexpr (kXInRegisters) {
    for (size_t i = 0; i < kM; ++i) {
      for (size_t v = 0; v < kV; ++v) xv[i][v] = hn::LoadU(df, t.x_rows[i] + offset + v * L);
    }
  }
  for (size_t j = 0; j < kN; ++j) {
    if constexpr (kPrefetch) hwy::Prefetch(w.ChunkAddress(t.next_rows[j], c));
    VMatMul wv[kV];
    VMatMul scale;
    if constexpr (kTail) {
      scale = w.LoadTail(df, t.n_rows[j], c, wv);
    } else {
      scale = w.Load(df, t.n_rows[j], c, wv);
    }
    for (size_t i = 0; i < kM; ++i) {
      if constexpr (kXInRegisters) {
        acc[i][j] = AddChunkDot<Weights>(xv[i], wv, scale, acc[i][j]);
      } else {
        // Few registers: x is re-read from L1 for each weight row (a memory operand of the FMA).
        VMatMul x[kV];
        for (size_t v = 0; v < kV; ++v) x[v] = hn::LoadU(df, t.x_rows[i] + offset + v * L);
        acc[i][j] = AddChunkDot<Weights>(x, wv, scale, acc[i][j]);
      }
    }
  }
}

// The partial last chunk (K % 2L != 0), its accumulators in memory [kM * kN * L]. Kept out of line: its
// zero-padded weight copy would otherwise keep the caller's accumulators out of registers.
template <size_t kM, size_t kN, class Weights>
HWY_NOINLINE void AccumulateTailChunk(const Weights& w, const TileRows& t, size_t c, float* accumulators) {
  const DMatMul df;
  const size_t L = hn::Lanes(df);
  VMatMul acc[kM][kN];
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kN; ++j) acc[i][j] = hn::Load(df, accumulators + (i * kN + j) * L);
  }
  AccumulateChunk<kM, kN, true, false>(df, w, t, c, acc);
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kN; ++j) hn::Store(acc[i][j], df, accumulators + (i * kN + j) * L);
  }
}

// A kM x kN tile (x rows by weight rows t.n_rows[0, kN)) over all num_chunks chunks of K; writes y.
// kPrefetch: also prefetches each chunk of the rows t.next_rows (and their scales, where the weights have
// a scale row), and t.other_lines lines of another task's weights after each chunk.
template <size_t kM, size_t kN, bool kPrefetch, class Weights>
HWY_INLINE void RunTile(const Weights& w, const TileRows& t, size_t num_chunks) {
  const DMatMul df;
  const size_t L = hn::Lanes(df);
  VMatMul acc[kM][kN];
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kN; ++j) acc[i][j] = hn::Zero(df);
  }
  if constexpr (kPrefetch) {
    for (size_t j = 0; j < kN; ++j) {
      if (const uint8_t* scales = w.ScaleRow(t.next_rows[j])) hwy::Prefetch(scales);
    }
  }
  const size_t c_full_end = std::min(num_chunks, w.full_chunks);
  size_t c = 0;
  if constexpr (kPrefetch) {
    if (t.other_lines != 0) {  // into L2 (locality 2: prefetcht1 on x86, PLDL2KEEP on arm64)
      const size_t other_bytes = static_cast<size_t>(t.other_end - t.other_begin);
      size_t offset = 0;
      for (; c < c_full_end; ++c) {
        AccumulateChunk<kM, kN, false, kPrefetch>(df, w, t, c, acc);
        for (size_t i = 0; i < t.other_lines && offset < other_bytes; ++i, offset += kCacheLineBytes) {
          __builtin_prefetch(t.other_begin + offset, 0, 2);
        }
      }
    }
  }
  for (; c < c_full_end; ++c) AccumulateChunk<kM, kN, false, kPrefetch>(df, w, t, c, acc);
  if (c < num_chunks) {  // the partial last chunk of each row, through memory (see AccumulateTailChunk)
    HWY_ALIGN float spill[kM * kN * hn::MaxLanes(DMatMul())];
    for (size_t i = 0; i < kM; ++i) {
      for (size_t j = 0; j < kN; ++j) hn::Store(acc[i][j], df, spill + (i * kN + j) * L);
    }
    AccumulateTailChunk<kM, kN>(w, t, c, spill);
    for (size_t i = 0; i < kM; ++i) {
      for (size_t j = 0; j < kN; ++j) acc[i][j] = hn::Load(df, spill + (i * kN + j) * L);
    }
  }
  for (size_t i = 0; i < kM; ++i) {
    // j runs to the constant kN (a runtime bound would force acc out of registers).
    for (size_t j = 0; j < kN; ++j) {
      const float sum = hn::GetLane(hn::SumOfLanes(df, acc[i][j]));
      if (j < t.n_valid) t.y_rows[i][j] = sum;
    }
  }
}

// ---- drivers -------------------------------------------------------------------------------------

// One kM x kN tile against the weight rows t.n_rows[0, kN); prefetches t.next_rows when `prefetch`.
template <size_t kM, size_t kN, bool kMayPrefetch, class Weights>
HWY_INLINE void RunTileMaybePrefetching(const Weights& w, const TileRows& t, size_t num_chunks,
                                        bool prefetch) {
  if constexpr (kMayPrefetch) {
    if (prefetch) return RunTile<kM, kN, true>(w, t, num_chunks);
  }
  RunTile<kM, kN, false>(w, t, num_chunks);
}

// A tile of `rows` (1..kM) x rows by kN weight rows: the compile-time height for a runtime row count.
template <size_t kM, size_t kN, bool kMayPrefetch, class Weights>
HWY_INLINE void RunTileOfHeight(size_t rows, const Weights& w, const TileRows& t, size_t num_chunks,
                                bool prefetch) {
  static_assert(kM >= 1 && kM <= kMaxTileRows && kMaxTileM <= kMaxTileRows, "tiles of 1 to 4 x rows");
  if (rows == 1) return RunTileMaybePrefetching<1, kN, kMayPrefetch>(w, t, num_chunks, prefetch);
  if constexpr (kM >= 2) {
    if (rows == 2) return RunTileMaybePrefetching<2, kN, kMayPrefetch>(w, t, num_chunks, prefetch);
  }
  if constexpr (kM >= 3) {
    if (rows == 3) return RunTileMaybePrefetching<3, kN, kMayPrefetch>(w, t, num_chunks, prefetch);
  }
  if constexpr (kM >= 4) {
    if (rows == 4) return RunTileMaybePrefetching<4, kN, kMayPrefetch>(w, t, num_chunks, prefetch);
  }
  HWY_ASSERT(false);
}

// The x tiles (kM rows each, the last one shorter) of rows [m_begin, m_end) against the weight rows
// t.n_rows[0, kN), writing y's columns from n0 on; the first x tile prefetches t.next_rows when `prefetch`
// (it pulls the weight rows from memory; the others find them in cache). kMayPrefetch false: never
// (weights with no prefetch addresses, a decoded panel).
template <size_t kM, size_t kN, bool kMayPrefetch, class Weights>
HWY_INLINE void RunTiles(const Weights& w, TileRows& t, const float* xs, size_t row_stride, size_t m_begin,
                         size_t m_end, float* y, size_t N, size_t n0, size_t num_chunks, bool prefetch) {
  for (size_t m0 = m_begin; m0 < m_end; m0 += kM) {
    const size_t rows = std::min(kM, m_end - m0);
    for (size_t i = 0; i < rows; ++i) {
      t.x_rows[i] = xs + (m0 + i) * row_stride;
      t.y_rows[i] = y + (m0 + i) * N + n0;
    }
    RunTileOfHeight<kM, kN, kMayPrefetch>(rows, w, t, num_chunks, prefetch && m0 == m_begin);
  }
}

// An MXFP4 weight tile (kTileN rows, the whole of K) decoded once for all the x tiles of a block: with more
// x rows than one register tile holds, each x tile would otherwise decode the same weights again. Not on
// AVX2, whose 4 x 2 tiles (RunTallTiles) decode on the fly and ran faster than this panel at every M from 8
// to 512. Load returns exactly the vectors (and scale) that Source::Load returns for the same row and
// chunk, so each y[m, n] meets the same values in the same order on either route: results do not depend
// on M.
// Layout: values [kTileN][num_chunks][kVectorsPerChunk * L], scales [kTileN][num_chunks].
template <class Source>
struct DecodedPanel {
  static constexpr size_t kVectorsPerChunk = Source::kVectorsPerChunk;
  static constexpr bool kScalePerChunk = Source::kScalePerChunk;
  static constexpr size_t kChunkFloats = kVectorsPerChunk * hn::MaxLanes(DMatMul());
  const float* values;
  const float* scale_values;
  size_t num_chunks;
  size_t full_chunks;

  HWY_INLINE VMatMul Load(DMatMul df, size_t n, size_t c, VMatMul (&out)[kVectorsPerChunk]) const {
    const float* p = values + (n * num_chunks + c) * kChunkFloats;
    for (size_t v = 0; v < kVectorsPerChunk; ++v) out[v] = hn::Load(df, p + v * hn::Lanes(df));
    return hn::Set(df, scale_values[n * num_chunks + c]);
  }
  HWY_INLINE VMatMul LoadTail(DMatMul df, size_t n, size_t c, VMatMul (&out)[kVectorsPerChunk]) const {
    return Load(df, n, c, out);
  }

  // Decodes rows t.n_rows of `source` into `buffer` (PanelFloats floats); prefetches t.next_rows as it goes
  // when `prefetch`.
  static DecodedPanel Decode(const Source& source, const TileRows& t, size_t num_chunks, bool prefetch,
                             float* buffer) {
    const DMatMul df;
    float* scales = buffer + kTileN * num_chunks * kChunkFloats;
    const DecodedPanel panel{buffer, scales, num_chunks, num_chunks};
    for (size_t j = 0; j < kTileN; ++j) {
      if (prefetch) {
        if (const uint8_t* row_scales = source.ScaleRow(t.next_rows[j])) hwy::Prefetch(row_scales);
      }
      for (size_t c = 0; c < num_chunks; ++c) {
        if (prefetch) hwy::Prefetch(source.ChunkAddress(t.next_rows[j], c));
        VMatMul v[kVectorsPerChunk];
        const VMatMul scale = source.Load(df, t.n_rows[j], c, v);
        float* p = buffer + (j * num_chunks + c) * kChunkFloats;
        for (size_t i = 0; i < kVectorsPerChunk; ++i) hn::Store(v[i], df, p + i * hn::Lanes(df));
        scales[j * num_chunks + c] = hn::GetLane(scale);
      }
    }
    return panel;
  }
  static size_t PanelFloats(size_t num_chunks) { return kTileN * num_chunks * (kChunkFloats + 1); }
};

// Weights whose tiles are decoded once into a DecodedPanel from kPanelMinM x rows.
template <class Weights>
inline constexpr bool kDecodesPanels = std::is_same_v<Weights, Mxfp4Weights>
#if HWY_TARGET == HWY_NEON
                                       || std::is_same_v<Weights, Mxfp4HalfWeights>
#endif
    ;

#if HWY_TARGET == HWY_AVX2
// MXFP4 on AVX2 with kTallMinM or more x rows (an expert's share of a decode batch, prefill): tiles of 4 x
// rows by 2 weight rows instead of 2 by 4. Same 8 accumulators, but each weight row is decoded once per 4 x
// rows instead of once per 2, and the decode (not the FMAs) bounds these shapes. Alternating call for call
// (Zen 3, one thread) they took 0.68-0.84x the time of 2 x 4 tiles at M = 3-7, and 0.72-0.99x the time of
// a DecodedPanel at M = 8-512, which AVX2 therefore does not use. Each y[m, n] is accumulated as on every
// other route, so results do not depend on M.
constexpr size_t kTallTileM = 4;
constexpr size_t kTallTileN = 2;
constexpr size_t kTallMinM = 3;

// The x rows [m_begin, m_end) against the weight tile t in pairs of weight rows; the first x tile of each
// pair prefetches that pair's rows ahead when `prefetch`.
template <class Weights>
HWY_INLINE void RunTallTiles(const Weights& w, const TileRows& t, const float* xs, size_t row_stride,
                             size_t m_begin, size_t m_end, float* y, size_t N, size_t n0, size_t num_chunks,
                             bool prefetch) {
  for (size_t j0 = 0; j0 < t.n_valid; j0 += kTallTileN) {
    TileRows pair;
    pair.n_valid = std::min(kTallTileN, t.n_valid - j0);
    for (size_t j = 0; j < kTallTileN; ++j) {
      pair.n_rows[j] = t.n_rows[j0 + j];  // past n_valid: the last valid row again (t.n_rows repeats it)
      pair.next_rows[j] = t.next_rows[j0 + j];
    }
    RunTiles<kTallTileM, kTallTileN, true>(w, pair, xs, row_stride, m_begin, m_end, y, N, n0 + j0, num_chunks,
                                           prefetch);
  }
}
#endif  // HWY_TARGET == HWY_AVX2

// Computes y[:, n_begin:n_end) for all M rows. xs: x in chunk layout, `row_stride` floats per row.
// [other_begin, other_begin + other_bytes): another task's weights to prefetch on the way (only where this
// call's own rows are prefetched: M from Weights::kPrefetchMinM to kPrefetchMaxM; ScheduleOverlap).
// MXFP4 weights with at least kPanelMinM x rows are decoded once per weight tile (DecodedPanel), except on
// AVX2, where from kTallMinM x rows they run 4 x 2 tiles (RunTallTiles).
template <class Weights>
HWY_NOINLINE void MatMulRowBlock(const Weights& w, const float* xs, size_t M, size_t row_stride,
                                 size_t num_chunks, float* y, size_t N, size_t n_begin, size_t n_end,
                                 const char* other_begin, size_t other_bytes) {
  const size_t rows_per_m_block = XRowsPerBlock(M, row_stride * sizeof(float));
  const size_t n_tiles = (n_end - n_begin + kTileN - 1) / kTileN;
  const size_t ahead = PrefetchDistanceRows(kTileN, w.RowBytes());
  const bool prefetch = M >= Weights::kPrefetchMinM && M <= kPrefetchMaxM;
  float* panel_buffer = nullptr;  // set when each weight tile is decoded once (DecodedPanel)
  if constexpr (kDecodesPanels<Weights>) {
    if (M >= kPanelMinM) {
      panel_buffer =
          ThreadScratch(ScratchSlot::kMatMulDecodedWeights, DecodedPanel<Weights>::PanelFloats(num_chunks));
    }
  }
  for (size_t m_block = 0; m_block < M; m_block += rows_per_m_block) {
    const size_t m_block_end = std::min(M, m_block + rows_per_m_block);
    for (size_t nt = 0; nt < n_tiles; ++nt) {
      const size_t n0 = n_begin + nt * kTileN;
      TileRows t;
      t.n_valid = std::min(kTileN, n_end - n0);
      if (prefetch && other_bytes != 0) {  // tile nt prefetches the nt-th slice, spread over its chunks
        const size_t slice =
            ((other_bytes + n_tiles - 1) / n_tiles + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes;
        t.other_begin = other_begin + std::min(other_bytes, nt * slice);
        t.other_end = other_begin + std::min(other_bytes, (nt + 1) * slice);
        t.other_lines = (slice + kCacheLineBytes * num_chunks - 1) / (kCacheLineBytes * num_chunks);
      }
      for (size_t j = 0; j < kTileN; ++j) {
        t.n_rows[j] = n0 + std::min(j, t.n_valid - 1);
        t.next_rows[j] = PrefetchRow(n0, ahead, j, n_end, t.n_rows[j]);
      }
#if HWY_TARGET == HWY_AVX2
      if constexpr (std::is_same_v<Weights, Mxfp4GroupWeights>) {
        if (M >= kTallMinM) {
          RunTallTiles(w, t, xs, row_stride, m_block, m_block_end, y, N, n0, num_chunks, prefetch);
          continue;
        }
      }
#endif
      if constexpr (kDecodesPanels<Weights>) {
        if (panel_buffer != nullptr) {
          const auto panel = DecodedPanel<Weights>::Decode(w, t, num_chunks, prefetch, panel_buffer);
          for (size_t j = 0; j < kTileN; ++j) t.n_rows[j] = j;
          RunTiles<kMaxTileM, kTileN, false>(panel, t, xs, row_stride, m_block, m_block_end, y, N, n0,
                                             num_chunks, false);
          continue;
        }
      }
      RunTiles<kMaxTileM, kTileN, true>(w, t, xs, row_stride, m_block, m_block_end, y, N, n0, num_chunks,
                                        prefetch);
    }
  }
}

// Copies x [M, K] into xs [M, num_chunks * chunk] in the chunk layout of the weights, zero-padded:
// xs[chunk c, slot i] = x[c * chunk + Weights::SourceOf(i)].
template <class Weights>
void LayOutInput(const float* x, size_t M, size_t K, size_t num_chunks, float* xs) {
  const size_t L = hn::Lanes(DMatMul());
  const size_t chunk = Weights::kVectorsPerChunk * L;
  const size_t row_stride = num_chunks * chunk;
  size_t source_of[Weights::kVectorsPerChunk * hn::MaxLanes(DMatMul())];
  for (size_t i = 0; i < chunk; ++i) source_of[i] = Weights::SourceOf(i, L);
  for (size_t m = 0; m < M; ++m) {
    const float* src = x + m * K;
    float* dst = xs + m * row_stride;
    const size_t full = K / chunk;
    for (size_t c = 0; c < full; ++c) {
      for (size_t i = 0; i < chunk; ++i) dst[c * chunk + i] = src[c * chunk + source_of[i]];
    }
    for (size_t c = full; c < num_chunks; ++c) {
      for (size_t i = 0; i < chunk; ++i) {
        const size_t k = c * chunk + source_of[i];
        dst[c * chunk + i] = k < K ? src[k] : 0.0f;
      }
    }
  }
}

// Rows of output per pool task: a multiple of kTileN, about 64 tasks for balance over 2..16 threads,
// at most 32 for many x rows (each task's rows meet every block of x). At decode (M <= kDecodeMaxM) a task
// gets at least kMinTaskWeightBytes of weights (up to 256 rows): a task is a run of consecutive weight rows
// that one thread streams, and each task start is a cold stream for the hardware prefetcher (the threads
// take tasks in turn, so a thread's next task is not where its last one ended). With 32 KiB tasks two
// threads decoded mini-k3 at 57-68 % of the read bandwidth, with 256 KiB at 64-76 % (paired runs on the
// 2-core dev VM, docs/performance.md, "Prefetching and pool tasks"); one thread is unaffected.
inline size_t RowsPerTask(size_t M, size_t N, size_t weight_row_bytes) {
  constexpr size_t kMinTaskWeightBytes = size_t{256} << 10;
  const bool decode = M <= kDecodeMaxM;
  const size_t max_rows = decode ? 256 : 32;
  size_t rows = (N + 63) / 64;
  if (decode) rows = std::max(rows, kMinTaskWeightBytes / std::max<size_t>(1, weight_row_bytes));
  rows = (rows + kTileN - 1) / kTileN * kTileN;
  return std::clamp<size_t>(rows, kTileN, max_rows);
}

// ---- grouped drivers: every job of a MatMulGroup under one fork-join ------------------------------

template <class Weights>
size_t FullChunks(size_t K) {
  return K / (Weights::kVectorsPerChunk * hn::Lanes(DMatMul()));
}

// The weight policy of a job (its weight kind at this target).
template <class Fn>
HWY_INLINE void WithWeights(const MatMulJob& job, const Fn& fn) {
  switch (job.kind) {
    case WeightKind::kBf16:
      fn(Bf16Weights{reinterpret_cast<const uint16_t*>(job.bf16_weights), job.K,
                     FullChunks<Bf16Weights>(job.K)});
      break;
    case WeightKind::kF32:
      fn(F32Weights{job.f32_weights, job.K, FullChunks<F32Weights>(job.K)});
      break;
    case WeightKind::kMxfp4:
    case WeightKind::kMxfp4Q8:  // (its tasks run mxfp4_q8.h's kernels; this only keeps the switch whole)
#if HWY_TARGET == HWY_AVX2
      fn(Mxfp4GroupWeights{
          {job.packed, job.scales, job.K, FullChunks<Mxfp4GroupWeights>(job.K), &Mxfp4Tables()}});
#elif HWY_TARGET == HWY_NEON
      fn(Mxfp4HalfWeights{
          {job.packed, job.scales, job.K, FullChunks<Mxfp4HalfWeights>(job.K), &Mxfp4Tables()}});
#else
      fn(Mxfp4Weights{job.packed, job.scales, job.K, FullChunks<Mxfp4Weights>(job.K), Mxfp4Tables().e8m0});
#endif
      break;
  }
}

inline size_t WeightRowBytes(const MatMulJob& job) {
  switch (job.kind) {
    case WeightKind::kBf16:
      return job.K * sizeof(bf16);
    case WeightKind::kF32:
      return job.K * sizeof(float);
    case WeightKind::kMxfp4:
    case WeightKind::kMxfp4Q8:
      return job.K / 2 + job.K / 32;
  }
  return 0;
}

// How each job's rows are computed. Bf16 jobs on a CPU with bf16 dot products (and MXFP4 jobs where
// dpbf16::Mxfp4Supported(): x86-64 with AVX512_VBMI too, any arm64 one) take the bf16 dot-product path for
// the rows of x that hold bf16 values and this target's fp32 path for the others; a row's path depends only
// on its own values, so batching never changes it. A job with both kinds of rows runs both paths over all
// rows, the fp32 one into a scratch y, and keeps each row's own.
struct JobLayout {
  const float* xs;  // x in this target's chunk layout (fp32 path)
  size_t row_stride, num_chunks;
  const uint16_t* dp_xs;  // x as bf16, rows padded to whole dpbf16 chunks (dp path)
  size_t dp_stride;
  bool dp_rows, fp32_rows;  // whether any row takes the dp / the fp32 path
  bool q8;                  // kMxfp4Q8: x quantised (mxfp4_q8.h) at xs, its scales at q8_scales
  const float* q8_scales;
  float* fp32_y;  // where the fp32 path writes: job.y, or scratch [M, N] when mixed
};
// Rows [m_begin, m_end) of job `job`'s x, laid out by one pool task.
struct LayoutPiece {
  size_t job, m_begin, m_end;
};
inline constexpr size_t kLayoutElementsPerPiece = size_t{1} << 15;
struct GroupTask {
  uint32_t job;
  bool dp;  // the dp path (else this target's fp32 path)
  size_t n_begin, n_end;
};

// Floats of scratch for the int8 values of a kMxfp4Q8 job's x [M, K], whole 64-byte lines (the scales
// follow).
inline size_t Q8ValueFloats(size_t M, size_t K) { return (M * K + 63) / 64 * 16; }

// Whether every value of x row `row` [K] is a bf16 value (low 16 bits of its fp32 pattern zero).
inline bool RowIsBf16(const float* row, size_t K) {
  uint32_t low_bits = 0;
  for (size_t k = 0; k < K; ++k) {
    uint32_t bits;
    std::memcpy(&bits, row + k, sizeof(bits));
    low_bits |= bits & 0xFFFFu;
  }
  return low_bits == 0;
}

void MatMulGroupImpl(const MatMulJob* jobs, size_t num_jobs, ThreadPool* pool) {
  const size_t L = hn::Lanes(DMatMul());
  const bool dp_bf16 = Bf16DotProductsActive();
  const bool dp_mxfp4 = dp_bf16 && dpbf16::Mxfp4Supported();
  thread_local std::vector<JobLayout> layouts;
  thread_local std::vector<GroupTask> tasks;
  thread_local std::vector<size_t> offsets;     // of each laid-out x (fp32 path) in the scratch buffer
  thread_local std::vector<size_t> dp_offsets;  // of each bf16 x (dp path)
  thread_local std::vector<size_t> y_offsets;   // of each mixed job's fp32-path y
  thread_local std::vector<size_t> source;      // the earlier job whose layout a job reuses (or itself)
  layouts.assign(num_jobs, JobLayout{});
  offsets.assign(num_jobs, 0);
  dp_offsets.assign(num_jobs, 0);
  y_offsets.assign(num_jobs, 0);
  source.assign(num_jobs, 0);
  tasks.clear();
  // x is laid out once per distinct (x, M, K, kind) among the jobs: projections of one input share it.
  size_t scratch_floats = 0;
  for (size_t j = 0; j < num_jobs; ++j) {
    const MatMulJob& job = jobs[j];
    JobLayout& layout = layouts[j];
    if (job.kind == WeightKind::kMxfp4 || job.kind == WeightKind::kMxfp4Q8) HWY_ASSERT(job.K % 32 == 0);
    size_t chunk = 0;
    WithWeights(job, [&](const auto& w) { chunk = std::decay_t<decltype(w)>::kVectorsPerChunk * L; });
    layout.num_chunks = (job.K + chunk - 1) / chunk;
    layout.row_stride = layout.num_chunks * chunk;
    const size_t dp_chunk = job.kind == WeightKind::kMxfp4 ? dpbf16::kMxfp4Block : dpbf16::kBf16Chunk;
    layout.dp_stride = (job.K + dp_chunk - 1) / dp_chunk * dp_chunk;
    source[j] = j;
    for (size_t i = 0; i < j; ++i) {
      if (jobs[i].x == job.x && jobs[i].M == job.M && jobs[i].K == job.K && jobs[i].kind == job.kind) {
        source[j] = source[i];
        break;
      }
    }
    if (source[j] == j && job.kind == WeightKind::kMxfp4Q8) {
      layout.q8 = true;
      offsets[j] = scratch_floats;
      scratch_floats += Q8ValueFloats(job.M, job.K) + (job.M * job.K / kQ8Group + 15) / 16 * 16;
    } else if (source[j] == j) {
      layout.fp32_rows = true;
      if ((dp_bf16 && job.kind == WeightKind::kBf16) || (dp_mxfp4 && job.kind == WeightKind::kMxfp4)) {
        size_t bf16_rows = 0;
        for (size_t m = 0; m < job.M; ++m) bf16_rows += RowIsBf16(job.x + m * job.K, job.K) ? 1 : 0;
        layout.dp_rows = bf16_rows > 0;
        layout.fp32_rows = bf16_rows < job.M;
      }
      if (layout.fp32_rows) {
        offsets[j] = scratch_floats;
        scratch_floats += job.M * layout.row_stride;
      }
      if (layout.dp_rows) {  // bf16 pairs in float slots, 64-byte aligned
        dp_offsets[j] = scratch_floats;
        scratch_floats += (job.M * layout.dp_stride / 2 + 15) / 16 * 16;
      }
    } else {
      layout.dp_rows = layouts[source[j]].dp_rows;
      layout.fp32_rows = layouts[source[j]].fp32_rows;
      layout.q8 = layouts[source[j]].q8;
    }
    if (job.M == 0 || job.N == 0) continue;
    if (layout.dp_rows && layout.fp32_rows) {
      y_offsets[j] = scratch_floats;
      scratch_floats += (job.M * job.N + 15) / 16 * 16;
    }
    const size_t rows_per_task = RowsPerTask(job.M, job.N, WeightRowBytes(job));
    for (size_t n = 0; n < job.N; n += rows_per_task) {
      const size_t n_end = std::min(job.N, n + rows_per_task);
      if (layout.dp_rows) tasks.push_back(GroupTask{static_cast<uint32_t>(j), true, n, n_end});
      if (layout.fp32_rows || layout.q8)
        tasks.push_back(GroupTask{static_cast<uint32_t>(j), false, n, n_end});
    }
  }
  float* scratch = ThreadScratch(ScratchSlot::kMatMulInput, scratch_floats);
  // Lay out each distinct x: in pieces of rows on the pool when there is enough of it (prefill), inline
  // otherwise (decode). Rows are laid out independently, so the cut does not change the layout.
  thread_local std::vector<LayoutPiece> pieces;
  pieces.clear();
  size_t layout_elements = 0;
  for (size_t j = 0; j < num_jobs; ++j) {
    const MatMulJob& job = jobs[j];
    JobLayout& layout = layouts[j];
    layout.xs = scratch + offsets[source[j]];
    layout.dp_xs = reinterpret_cast<const uint16_t*>(scratch + dp_offsets[source[j]]);
    layout.fp32_y = layout.dp_rows && layout.fp32_rows ? scratch + y_offsets[j] : job.y;
    if (layout.q8) layout.q8_scales = scratch + offsets[source[j]] + Q8ValueFloats(job.M, job.K);
    if (source[j] != j || job.M == 0) continue;
    const size_t rows_per_piece = std::max<size_t>(1, kLayoutElementsPerPiece / std::max<size_t>(1, job.K));
    for (size_t m = 0; m < job.M; m += rows_per_piece) {
      pieces.push_back(LayoutPiece{j, m, std::min(job.M, m + rows_per_piece)});
    }
    layout_elements += job.M * job.K;
  }
  // The thread_local vectors are reached through pointers: a pool worker names its own instances.
  const LayoutPiece* piece_list = pieces.data();
  const JobLayout* layout_list = layouts.data();
  const size_t* fp32_offsets = offsets.data();
  const size_t* bf16_offsets = dp_offsets.data();
  auto lay_out_piece = [&](size_t p) {
    const LayoutPiece& piece = piece_list[p];
    const MatMulJob& job = jobs[piece.job];
    const JobLayout& layout = layout_list[piece.job];
    const size_t m0 = piece.m_begin, rows = piece.m_end - piece.m_begin;
    const float* x = job.x + m0 * job.K;
    if (layout.q8) {
      float* values = scratch + fp32_offsets[piece.job];
      QuantizeRowsQ8(x, rows, job.K, reinterpret_cast<int8_t*>(values) + m0 * job.K,
                     values + Q8ValueFloats(job.M, job.K) + m0 * (job.K / kQ8Group));
      return;
    }
    if (layout.fp32_rows) {
      WithWeights(job, [&](const auto& w) {
        using Weights = std::decay_t<decltype(w)>;
        LayOutInput<Weights>(x, rows, job.K, layout.num_chunks,
                             scratch + fp32_offsets[piece.job] + m0 * layout.row_stride);
      });
    }
    if (layout.dp_rows) {  // the top half of each fp32 (exact for the rows that take this path)
      uint16_t* dst = reinterpret_cast<uint16_t*>(scratch + bf16_offsets[piece.job]) + m0 * layout.dp_stride;
      if (job.kind == WeightKind::kMxfp4) {
        dpbf16::LayOutMxfp4Input(x, rows, job.K, dst, layout.dp_stride);
        return;
      }
      for (size_t m = 0; m < rows; ++m) {
        for (size_t k = 0; k < job.K; ++k) {
          uint32_t bits;
          std::memcpy(&bits, x + m * job.K + k, sizeof(bits));
          dst[m * layout.dp_stride + k] = static_cast<uint16_t>(bits >> 16);
        }
        std::fill(dst + m * layout.dp_stride + job.K, dst + (m + 1) * layout.dp_stride, uint16_t{0});
      }
    }
  };
  if (pool != nullptr && layout_elements >= 2 * kLayoutElementsPerPiece) {
    pool->ParallelFor(pieces.size(), [&](size_t p, size_t /*worker*/) { lay_out_piece(p); });
  } else {
    for (size_t p = 0; p < pieces.size(); ++p) lay_out_piece(p);
  }
  const GroupTask* task_list = tasks.data();
  // Task t; prefetches [other_begin, other_begin + other_bytes) of another task's weights on the way.
  auto run_task = [&](size_t t, const char* other_begin, size_t other_bytes) {
    const GroupTask& task = task_list[t];
    const MatMulJob& job = jobs[task.job];
    const JobLayout& layout = layout_list[task.job];
    if (layout.q8) {
      q8::RowBlock(q8::RowBlockArgs{reinterpret_cast<const int8_t*>(layout.xs), layout.q8_scales, job.M,
                                    job.K, job.packed, job.scales, job.y, job.N, task.n_begin, task.n_end,
                                    other_begin, other_bytes});
      return;
    }
    if (task.dp && job.kind == WeightKind::kMxfp4) {
      dpbf16::Mxfp4RowBlock(layout.dp_xs, job.M, layout.dp_stride, job.K, job.packed, job.scales, job.y,
                            job.N, task.n_begin, task.n_end);
      return;
    }
    if (task.dp) {
      dpbf16::RowBlock(layout.dp_xs, job.M, layout.dp_stride, job.K,
                       reinterpret_cast<const uint16_t*>(job.bf16_weights), job.y, job.N, task.n_begin,
                       task.n_end);
      return;
    }
    WithWeights(job, [&](const auto& w) {
      MatMulRowBlock(w, layout.xs, job.M, layout.row_stride, layout.num_chunks, layout.fp32_y, job.N,
                     task.n_begin, task.n_end, other_begin, other_bytes);
    });
  };
  // Run order (matmul_overlap.h): at decode sizes, bf16 tasks behind MXFP4 tasks that prefetch them.
  thread_local std::vector<OverlapTaskInfo> task_infos;
  thread_local std::vector<ScheduledTask> order;
  thread_local std::vector<ScheduleUnit> units;
  const bool overlap = MatMulOverlapActive();
  task_infos.clear();
  for (const GroupTask& task : tasks) {
    const MatMulJob& job = jobs[task.job];
    const size_t row_bytes = WeightRowBytes(job);
    OverlapTaskInfo info{OverlapTaskInfo::Role::kOther, nullptr, (task.n_end - task.n_begin) * row_bytes};
    if (overlap && job.M <= kMatMulOverlapMaxRows) {
      // Only this target's fp32 path (MatMulRowBlock) and the int8 kernels (mxfp4_q8.h) prefetch another
      // task's weights.
      if ((job.kind == WeightKind::kMxfp4 || job.kind == WeightKind::kMxfp4Q8) && !task.dp) {
        info.role = OverlapTaskInfo::Role::kCompute;
      }
      if (job.kind == WeightKind::kBf16) {
        info.role = OverlapTaskInfo::Role::kStream;
        info.weights = reinterpret_cast<const char*>(job.bf16_weights) + task.n_begin * row_bytes;
      }
    }
    task_infos.push_back(info);
  }
  ScheduleOverlap(task_infos, &order, &units);
  const ScheduledTask* order_list = order.data();
  const ScheduleUnit* unit_list = units.data();
  auto run_unit = [&](size_t u) {
    for (uint32_t i = unit_list[u].begin; i < unit_list[u].end; ++i) {
      run_task(order_list[i].task, order_list[i].prefetch_begin, order_list[i].prefetch_bytes);
    }
  };
  const size_t num_units = units.size();
  if (pool == nullptr || pool->num_threads() == 1 || num_units <= 1) {
    for (size_t u = 0; u < num_units; ++u) run_unit(u);
  } else {
    pool->ParallelFor(num_units, [&](size_t u, size_t /*worker*/) { run_unit(u); });
  }
  for (size_t j = 0; j < num_jobs; ++j) {  // mixed jobs: the fp32 path's result for its own rows
    const MatMulJob& job = jobs[j];
    const JobLayout& layout = layouts[j];
    if (job.N == 0 || layout.fp32_y == job.y) continue;
    for (size_t m = 0; m < job.M; ++m) {
      if (!RowIsBf16(job.x + m * job.K, job.K)) {
        std::copy(layout.fp32_y + m * job.N, layout.fp32_y + (m + 1) * job.N, job.y + m * job.N);
      }
    }
  }
}

// ---- per-target entry points (exported by matmul.cc) ---------------------------------------------

void MatMulBf16Impl(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y, ThreadPool* pool) {
  const MatMulJob job = MatMulJob::Bf16(x, M, K, W, N, y);
  MatMulGroupImpl(&job, 1, pool);
}

void MatMulF32Impl(const float* x, size_t M, size_t K, const float* W, size_t N, float* y, ThreadPool* pool) {
  const MatMulJob job = MatMulJob::F32(x, M, K, W, N, y);
  MatMulGroupImpl(&job, 1, pool);
}

void MatMulMxfp4Impl(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales,
                     size_t N, float* y, ThreadPool* pool) {
  const MatMulJob job = MatMulJob::Mxfp4(x, M, K, packed, scales, N, y);
  MatMulGroupImpl(&job, 1, pool);
}

#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace k3::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // K3_KERNELS_MATMUL_INL_H_
