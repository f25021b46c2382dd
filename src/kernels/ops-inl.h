// Highway bodies of the element-wise and row kernels of ops.h (norms, GLU activations, bf16 rounding,
// dot, axpy, softmax), compiled once per SIMD target by ops.cc through hwy/foreach_target.h.
//
// Each op is written once as a template over the vector descriptor D: whole vectors run with the full
// width, the remaining n % L elements with a one-lane descriptor, so nothing past the arrays is read
// and every element goes through the same instructions. Formulas mirror ops_scalar.cc term by term
// (same association order) so the fp32 results differ from the reference only by the vector math
// (hwy Exp/Tanh, about 1-2 ulp) and by the summation order of reductions. The final bf16 rounding is
// round-to-nearest-even with quiet NaN, bit-for-bit the same as k3::FloatToBf16.

#if defined(K3_KERNELS_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef K3_KERNELS_OPS_INL_H_
#undef K3_KERNELS_OPS_INL_H_
#else
#define K3_KERNELS_OPS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "src/base/bf16.h"
#include "src/kernels/lane_sums_avx512-inl.h"

HWY_BEFORE_NAMESPACE();
namespace k3::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DFull = hn::ScalableTag<float>;
using DOne = hn::CappedTag<float, 1>;

// ---- building blocks -----------------------------------------------------------------------------

// fp32 -> nearest-even bf16, returned widened back to fp32 (k3::RoundBf16, lane-wise).
template <class D, class V>
HWY_INLINE V RoundBf16(D d, V v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto high_mask = hn::Set(du, 0xFFFF0000u);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::And(hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), lsb)), high_mask);
  const auto quiet_nan = hn::Or(hn::And(bits, high_mask), hn::Set(du, 0x00400000u));
  // NaN: exponent all ones and a non-zero mantissa, i.e. |bits| > 0x7F800000 (a signed compare of two
  // non-negative int32 values).
  const hn::RebindToSigned<D> di;
  const auto magnitude = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
  const auto is_nan = hn::RebindMask(d, hn::Gt(magnitude, hn::Set(di, 0x7F800000)));
  return hn::IfThenElse(is_nan, hn::BitCast(d, quiet_nan), hn::BitCast(d, rounded));
}

// Lanes(d) bf16 from p, widened to fp32.
template <class D>
HWY_INLINE hn::Vec<D> LoadBf16(D d, const bf16* p) {
  const hn::RebindToUnsigned<D> du32;
  const hn::Rebind<uint16_t, D> du16;
  const auto bits = hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  return hn::BitCast(d, hn::ShiftLeft<16>(bits));
}

// 1 / (1 + exp(-v)). The exponent is capped at 100 (exp gives inf from 88.7 on, and hwy's Exp is valid
// up to 104), so very negative v gives 0 like the scalar reference.
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V v) {
  const V one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(v), hn::Set(d, 100.0f)))));
}

// Lanes(d) floats from p, or bf16 widened to fp32: the row loads of the dot products.
template <class D>
HWY_INLINE hn::Vec<D> LoadRow(D d, const float* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadRow(D d, const bf16* p) {
  return LoadBf16(d, p);
}

// sum_i a[i] * b[i] over the whole vectors of n (four accumulators, then single vectors), for b in fp32 or
// bf16 (widened exactly, so both sum alike); *end is where the remainder starts.
template <class B>
HWY_INLINE float DotWholeVectors(const float* a, const B* b, size_t n, size_t* end) {
  const DFull d;
  const size_t L = hn::Lanes(d);
  auto sum0 = hn::Zero(d);
  auto sum1 = hn::Zero(d);
  auto sum2 = hn::Zero(d);
  auto sum3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    sum0 = hn::MulAdd(hn::LoadU(d, a + i), LoadRow(d, b + i), sum0);
    sum1 = hn::MulAdd(hn::LoadU(d, a + i + L), LoadRow(d, b + i + L), sum1);
    sum2 = hn::MulAdd(hn::LoadU(d, a + i + 2 * L), LoadRow(d, b + i + 2 * L), sum2);
    sum3 = hn::MulAdd(hn::LoadU(d, a + i + 3 * L), LoadRow(d, b + i + 3 * L), sum3);
  }
  for (; i + L <= n; i += L) sum0 = hn::MulAdd(hn::LoadU(d, a + i), LoadRow(d, b + i), sum0);
  *end = i;
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(sum0, sum1), hn::Add(sum2, sum3))));
}

// sum_i a[i] * b[i]: the whole vectors, then the remainder in order.
HWY_INLINE float DotImpl(const float* a, const float* b, size_t n) {
  size_t i = 0;
  float total = DotWholeVectors(a, b, n, &i);
  for (; i < n; ++i) total += a[i] * b[i];
  return total;
}

// The score of one (query, row) pair of latent attention, before the scale: sum_i q[i] * row[i] for a row in
// fp32 or bf16 (widened exactly, so both sum alike). The whole vectors go into one vector accumulator, a
// MulAdd per vector in i order; its lanes are summed by SumOfLanes; the remainder follows one lane at a time,
// a product then a sum, never fused (the compiler would contract a plain expression into an FMA where it
// saw fit). Every attention kernel sums each pair exactly so (LatentScoresTile below runs the FMAs of
// several pairs side by side), so a score has the same bits whichever kernel, tile or batch computed it.
template <class B>
HWY_INLINE float ScoreRemainder(const float* q, const B* row, size_t i, size_t n, float total) {
  const DOne d1;
  for (; i < n; ++i) {
    const auto product = hn::Mul(hn::LoadU(d1, q + i), LoadRow(d1, row + i));
    total = hn::GetLane(hn::Add(hn::Set(d1, total), product));
  }
  return total;
}
template <class B>
HWY_INLINE float ScoreDot(const float* q, const B* row, size_t n) {
  const DFull d;
  const size_t L = hn::Lanes(d);
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + L <= n; i += L) acc = hn::MulAdd(hn::LoadU(d, q + i), LoadRow(d, row + i), acc);
  return ScoreRemainder(q, row, i, n, hn::GetLane(hn::SumOfLanes(d, acc)));
}

// DotBf16: one pair's score (ScoreDot).
HWY_INLINE float DotBf16Impl(const float* a, const bf16* b, size_t n) { return ScoreDot(a, b, n); }

// ---- per-vector steps (D is the full or the one-lane descriptor) -----------------------------------

template <class D>
HWY_INLINE void RoundStep(D d, float* x) {
  hn::StoreU(RoundBf16(d, hn::LoadU(d, x)), d, x);
}

// y = bf16(x): RoundBf16's bits, upper halves narrowed to u16 (0..0xFFFF as non-negative i32, so the
// saturating i32 -> u16 demotion is exact).
template <class D>
HWY_INLINE void NarrowStep(D d, const float* x, bf16* y) {
  const hn::RebindToUnsigned<D> du32;
  const hn::RebindToSigned<D> di32;
  const hn::Rebind<uint16_t, D> du16;
  const auto high = hn::ShiftRight<16>(hn::BitCast(du32, RoundBf16(d, hn::LoadU(d, x))));
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, high)), du16, reinterpret_cast<uint16_t*>(y));
}

template <class D>
HWY_INLINE void WidenStep(D d, const bf16* x, float* y) {
  hn::StoreU(LoadBf16(d, x), d, y);
}

// y = bf16(w * bf16(x * inv))
template <class D>
HWY_INLINE void RmsNormStep(D d, const float* x, const bf16* w, float inv, float* y) {
  const auto normed = RoundBf16(d, hn::Mul(hn::LoadU(d, x), hn::Set(d, inv)));
  hn::StoreU(RoundBf16(d, hn::Mul(LoadBf16(d, w), normed)), d, y);
}

template <class D>
HWY_INLINE void ScaleStep(D d, const float* x, float inv, float* y) {
  hn::StoreU(hn::Mul(hn::LoadU(d, x), hn::Set(d, inv)), d, y);
}

// y = bf16(((o * inv) * w) * sigmoid(gate))
template <class D>
HWY_INLINE void GatedRmsNormStep(D d, const float* o, const float* gate, const float* w, float inv,
                                 float* y) {
  const auto scaled = hn::Mul(hn::Mul(hn::LoadU(d, o), hn::Set(d, inv)), hn::LoadU(d, w));
  hn::StoreU(RoundBf16(d, hn::Mul(scaled, Sigmoid(d, hn::LoadU(d, gate)))), d, y);
}

// out = bf16((beta * tanh(a / beta) * sigmoid(a)) * (linear_beta * tanh(b / linear_beta)))
template <class D>
HWY_INLINE void SituGluStep(D d, const float* a, const float* b, float beta, float linear_beta, float* out) {
  const auto va = hn::LoadU(d, a);
  const auto vb = hn::LoadU(d, b);
  const auto vbeta = hn::Set(d, beta);
  const auto vlinear_beta = hn::Set(d, linear_beta);
  const auto act = hn::Mul(hn::Mul(vbeta, hn::Tanh(d, hn::Div(va, vbeta))), Sigmoid(d, va));
  const auto lin = hn::Mul(vlinear_beta, hn::Tanh(d, hn::Div(vb, vlinear_beta)));
  hn::StoreU(RoundBf16(d, hn::Mul(act, lin)), d, out);
}

// out = bf16((a * sigmoid(a)) * b)
template <class D>
HWY_INLINE void SiluGluStep(D d, const float* a, const float* b, float* out) {
  const auto va = hn::LoadU(d, a);
  hn::StoreU(RoundBf16(d, hn::Mul(hn::Mul(va, Sigmoid(d, va)), hn::LoadU(d, b))), d, out);
}

template <class D>
HWY_INLINE void AxpyBf16Step(D d, float alpha, const bf16* x, float* y) {
  hn::StoreU(hn::MulAdd(hn::Set(d, alpha), LoadBf16(d, x), hn::LoadU(d, y)), d, y);
}

template <class D>
HWY_INLINE void AxpyStep(D d, float alpha, const float* x, float* y) {
  hn::StoreU(hn::MulAdd(hn::Set(d, alpha), hn::LoadU(d, x), hn::LoadU(d, y)), d, y);
}

// x = exp(x - max); returns the values for the caller's sum.
template <class D>
HWY_INLINE hn::Vec<D> ExpShiftedStep(D d, float max, float* x) {
  const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x), hn::Set(d, max)));
  hn::StoreU(e, d, x);
  return e;
}

template <class D>
HWY_INLINE void DivideStep(D d, float divisor, float* x) {
  hn::StoreU(hn::Div(hn::LoadU(d, x), hn::Set(d, divisor)), d, x);
}

// Runs step(d, i) over [0, n): whole vectors of the full descriptor, then single lanes.
template <class Step>
HWY_INLINE void ForEachVector(size_t n, const Step& step) {
  const DFull d;
  const DOne d1;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L) step(d, i);
  for (; i < n; ++i) step(d1, i);
}

// rsqrt(mean(x^2) + eps) computed as the reference does (1 / sqrt(...), fp32).
HWY_INLINE float InverseRms(const float* x, size_t n, float eps) {
  const float ss = DotImpl(x, x, n);
  return 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
}

// ---- per-target entry points (exported by ops.cc) ------------------------------------------------

void RoundToBf16Impl(float* x, size_t n) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { RoundStep(d, x + i); });
}

void Bf16ToF32Impl(const bf16* x, size_t n, float* y) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { WidenStep(d, x + i, y + i); });
}

void RmsNormImpl(const float* x, const bf16* w, size_t n, float eps, float* y) {
  const float inv = InverseRms(x, n, eps);
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { RmsNormStep(d, x + i, w + i, inv, y + i); });
}

void RmsNormNoWeightImpl(const float* x, size_t n, float eps, float* y) {
  const float inv = InverseRms(x, n, eps);
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { ScaleStep(d, x + i, inv, y + i); });
}

void GatedRmsNormImpl(const float* o, const float* gate, const float* w, size_t n, float eps, float* y) {
  const float inv = InverseRms(o, n, eps);
  ForEachVector(n,
                [&](auto d, size_t i) HWY_ATTR { GatedRmsNormStep(d, o + i, gate + i, w + i, inv, y + i); });
}

void SituGluImpl(const float* a, const float* b, size_t n, float beta, float linear_beta, float* out) {
  ForEachVector(n,
                [&](auto d, size_t i) HWY_ATTR { SituGluStep(d, a + i, b + i, beta, linear_beta, out + i); });
}

void SiluGluImpl(const float* a, const float* b, size_t n, float* out) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { SiluGluStep(d, a + i, b + i, out + i); });
}

float DotImplExport(const float* a, const float* b, size_t n) { return DotImpl(a, b, n); }

void AxpyImpl(float alpha, const float* x, float* y, size_t n) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { AxpyStep(d, alpha, x + i, y + i); });
}

void F32ToBf16Impl(const float* x, size_t n, bf16* y) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { NarrowStep(d, x + i, y + i); });
}

float DotBf16ImplExport(const float* a, const bf16* b, size_t n) { return DotBf16Impl(a, b, n); }

void AxpyBf16Impl(float alpha, const bf16* x, float* y, size_t n) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR { AxpyBf16Step(d, alpha, x + i, y + i); });
}

// In-place softmax; the maximum and the sum of exp(x - max) it divided by go to *max_out and *sum_out
// (where not null: what a softmax over several chunks of scores needs to join them, layer_ops.h).
void SoftmaxStatsImpl(float* x, size_t n, float* max_out, float* sum_out) {
  if (n == 0) return;
  const DFull d;
  const size_t L = hn::Lanes(d);
  float max = x[0];
  size_t i = 0;
  if (n >= L) {
    auto vmax = hn::LoadU(d, x);
    for (i = L; i + L <= n; i += L) vmax = hn::Max(vmax, hn::LoadU(d, x + i));
    max = hn::GetLane(hn::MaxOfLanes(d, vmax));
  }
  for (; i < n; ++i) max = std::max(max, x[i]);

  auto vsum = hn::Zero(d);
  float sum = 0.0f;
  ForEachVector(n, [&](auto dd, size_t j) HWY_ATTR {
    const auto e = ExpShiftedStep(dd, max, x + j);
    if constexpr (hn::MaxLanes(decltype(dd)()) == 1) {
      sum += hn::GetLane(e);
    } else {
      vsum = hn::Add(vsum, e);
    }
  });
  sum += hn::GetLane(hn::SumOfLanes(d, vsum));
  ForEachVector(n, [&](auto dd, size_t j) HWY_ATTR { DivideStep(dd, sum, x + j); });
  if (max_out != nullptr) *max_out = max;
  if (sum_out != nullptr) *sum_out = sum;
}

// ---- latent attention of several queries over the same rows ----------------------------------------------
// The heads of one token attend over the same latent rows (spec §2.4, absorbed form). The scores take
// tiles of up to kQueriesPerPass queries by kScoreRows rows: each row vector is loaded and widened once for
// the tile's queries and each query vector once for its rows, and the tile's pairs each keep one vector
// accumulator (ScoreDot's sums, so the scores are those of one pair at a time, bit for bit). The context
// sums take kRowsPerStep rows per load and store of an accumulator vector; for each query the operations on
// each value, and their order, are those of LatentAttentionBf16 (SoftmaxStatsImpl, AxpyBf16Impl over j
// ascending), so every result is bit for bit the one-query kernel's.
// Key blocks: both passes run over blocks of kKeysPerBlock rows, every group of queries finishing a block
// before the next, so a long cache is streamed from memory once per pass (for all the queries) instead of
// once per group; a block (288 KiB at K3's 576-wide rows) stays in L2 meanwhile. Blocks are whole steps of
// kRowsPerStep rows and the context sums carry over from block to block in memory, so each query's
// operations and their order do not change.
constexpr size_t kQueriesPerPass = 4;
constexpr size_t kRowsPerStep = 4;
constexpr size_t kKeysPerBlock = 256;
static_assert(kKeysPerBlock % kRowsPerStep == 0, "blocks must not cut a step of the context sums");

#if HWY_HAVE_SCALABLE
// SVE / RVV vectors are sizeless types, which C++ cannot hold in the arrays of the tiles below: one pair at a
// time there (the same sums, so the same results).
template <class B>
void LatentScoresImpl(const float* const* queries, size_t num_queries, const B* const* rows, size_t visible,
                      size_t width, float scale, float* scores) {
  for (size_t g = 0; g < num_queries; ++g) {
    for (size_t j = 0; j < visible; ++j)
      scores[g * visible + j] = ScoreDot(queries[g], rows[j], width) * scale;
  }
}

void LatentAttentionBf16QueriesImpl(const float* const* queries, size_t num_queries, const bf16* const* rows,
                                    size_t visible, size_t width, size_t ctx_width, float scale,
                                    float* scores, float* const* ctx, float* max, float* sum) {
  LatentScoresImpl(queries, num_queries, rows, visible, width, scale, scores);
  for (size_t g = 0; g < num_queries; ++g) {
    float* query_scores = scores + g * visible;
    SoftmaxStatsImpl(query_scores, visible, max == nullptr ? nullptr : max + g,
                     sum == nullptr ? nullptr : sum + g);
    std::fill(ctx[g], ctx[g] + ctx_width, 0.0f);
    for (size_t j = 0; j < visible; ++j) AxpyBf16Impl(query_scores[j], rows[j], ctx[g], ctx_width);
  }
}
#else
// Rows per score tile of G queries: with 4 queries, 4 x kScoreRows accumulators, kScoreRows row vectors and a
// query vector fill AVX2's 16 registers at 3 rows (4 rows leave room in the 32 of AVX-512 and NEON). One or
// two queries take 4 rows, so that a tile keeps at least 4 independent chains of MulAdds in flight (one query
// over 3 rows would wait longer on their latency). 8 rows for one query measured no better than 4.
constexpr size_t kScoreRows = (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4) ? 3 : 4;
constexpr size_t ScoreRowsFor(size_t G) { return G <= 2 ? 4 : kScoreRows; }

// out[g][k] = ScoreDot(queries[g], rows[k], width) * scale for g < G, k < R.
template <size_t G, size_t R, class B>
HWY_INLINE void LatentScoresTile(const float* const* queries, const B* const* rows, size_t width, float scale,
                                 float* const* out, size_t k0) {
  const DFull d;
  const size_t L = hn::Lanes(d);
  using V = hn::Vec<DFull>;
  V acc[G][R];
  for (size_t g = 0; g < G; ++g) {
    for (size_t k = 0; k < R; ++k) acc[g][k] = hn::Zero(d);
  }
  size_t i = 0;
  for (; i + L <= width; i += L) {
    V r[R];
    for (size_t k = 0; k < R; ++k) r[k] = LoadRow(d, rows[k] + i);
    for (size_t g = 0; g < G; ++g) {
      const V q = hn::LoadU(d, queries[g] + i);
      for (size_t k = 0; k < R; ++k) acc[g][k] = hn::MulAdd(q, r[k], acc[g][k]);
    }
  }
  for (size_t g = 0; g < G; ++g) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (R == 4) {  // AVX-512: the four lane sums side by side, each SumOfLanes' bits
      float lane_sums[16];
      const __m512 row_sums[4] = {acc[g][0].raw, acc[g][1].raw, acc[g][2].raw, acc[g][3].raw};
      _mm512_storeu_ps(lane_sums, SumsOfLanes4(row_sums));
      for (size_t k = 0; k < R; ++k)
        out[g][k0 + k] = ScoreRemainder(queries[g], rows[k], i, width, lane_sums[4 * k]) * scale;
      continue;
    }
#endif
    for (size_t k = 0; k < R; ++k) {
      const float total = hn::GetLane(hn::SumOfLanes(d, acc[g][k]));
      out[g][k0 + k] = ScoreRemainder(queries[g], rows[k], i, width, total) * scale;
    }
  }
}

// LatentScoresTile<G, R> for R = n, 1 <= n <= R (the partial last tile of a pass takes n < R rows).
template <size_t G, size_t R, class B>
HWY_INLINE void LatentScoresTileOf(size_t n, const float* const* queries, const B* const* rows, size_t width,
                                   float scale, float* const* out, size_t k0) {
  if constexpr (R > 1) {
    if (n < R) return LatentScoresTileOf<G, R - 1>(n, queries, rows, width, scale, out, k0);
  }
  LatentScoresTile<G, R>(queries, rows, width, scale, out, k0);
}

// scores[g][j] = ScoreDot(queries[g], rows[j], width) * scale for j < visible, g < G, in tiles of
// ScoreRowsFor(G) rows. With `prefetch` (the first group of queries over a key block) the rows
// kScoreRowsAhead ahead are prefetched (the next block's first rows near its end; `readable` rows from `rows`
// have addresses): the cache is paged in blocks of rows scattered over memory, where the hardware
// prefetchers stop at every 4 KiB page, and the rows a pass computes on are too few to hide the misses.
constexpr size_t kScoreRowsAhead = 16;
template <size_t G, class B>
HWY_INLINE void LatentScoresPass(const float* const* queries, const B* const* rows, size_t visible,
                                 size_t readable, size_t width, float scale, bool prefetch,
                                 float* const* scores) {
  constexpr size_t R = ScoreRowsFor(G);
  const size_t row_bytes = width * sizeof(B);
  for (size_t j = 0; j < visible; j += R) {
    if (prefetch) {
      for (size_t k = j + kScoreRowsAhead; k < std::min(readable, j + kScoreRowsAhead + R); ++k) {
        const char* ahead = reinterpret_cast<const char*>(rows[k]);
        for (size_t b = 0; b < row_bytes; b += 64) hwy::Prefetch(ahead + b);
        hwy::Prefetch(ahead + row_bytes - 1);
      }
    }
    LatentScoresTileOf<G, R>(std::min(R, visible - j), queries, rows + j, width, scale, scores, j);
  }
}

// ctx[g][c] += p[g][j] * rows[j][c] for j < visible, in j order (AxpyBf16Impl's MulAdd per row), for
// c < ctx_width. Slices of kContextVectors vectors keep their G x kContextVectors sums in registers over
// all the rows (16 of the 32 registers of AVX-512 and NEON at G = 4, 8 of AVX2's 16), loaded and stored
// once per call: each lane meets the same MulAdds in the same order as through memory, so the bits are
// AxpyBf16Impl's. The rest of the width (under a slice) takes kRowsPerStep rows per load and store of a sum.
constexpr size_t kContextVectors = (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4) ? 2 : 4;
template <size_t G>
HWY_INLINE void LatentContextPass(const float* const* p, const bf16* const* rows, size_t visible,
                                  size_t ctx_width, float* const* ctx) {
  const DFull d;
  using V = hn::Vec<DFull>;
  const size_t L = hn::Lanes(d);
  size_t c0 = 0;
  for (; c0 + kContextVectors * L <= ctx_width; c0 += kContextVectors * L) {
    V acc[G][kContextVectors];
    for (size_t g = 0; g < G; ++g) {
      for (size_t v = 0; v < kContextVectors; ++v) acc[g][v] = hn::LoadU(d, ctx[g] + c0 + v * L);
    }
    for (size_t j = 0; j < visible; ++j) {
      V r[kContextVectors];
      for (size_t v = 0; v < kContextVectors; ++v) r[v] = LoadBf16(d, rows[j] + c0 + v * L);
      for (size_t g = 0; g < G; ++g) {
        const V pj = hn::Set(d, p[g][j]);
        for (size_t v = 0; v < kContextVectors; ++v) acc[g][v] = hn::MulAdd(pj, r[v], acc[g][v]);
      }
    }
    for (size_t g = 0; g < G; ++g) {
      for (size_t v = 0; v < kContextVectors; ++v) hn::StoreU(acc[g][v], d, ctx[g] + c0 + v * L);
    }
  }
  if (c0 == ctx_width) return;
  for (size_t j0 = 0; j0 < visible; j0 += kRowsPerStep) {
    const size_t n = std::min(kRowsPerStep, visible - j0);
    ForEachVector(ctx_width - c0, [&](auto dd, size_t i) HWY_ATTR {
      const size_t c = c0 + i;
      hn::Vec<decltype(dd)> r[kRowsPerStep];
      for (size_t k = 0; k < n; ++k) r[k] = LoadBf16(dd, rows[j0 + k] + c);
      for (size_t g = 0; g < G; ++g) {
        auto acc = hn::LoadU(dd, ctx[g] + c);
        for (size_t k = 0; k < n; ++k) acc = hn::MulAdd(hn::Set(dd, p[g][j0 + k]), r[k], acc);
        hn::StoreU(acc, dd, ctx[g] + c);
      }
    });
  }
}

// fn(q0, std::integral_constant<size_t, G>) for each group [q0, q0 + G) of up to kQueriesPerPass queries.
template <class Fn>
HWY_INLINE void ForEachQueryGroup(size_t num_queries, const Fn& fn) {
  for (size_t q0 = 0; q0 < num_queries; q0 += kQueriesPerPass) {
    switch (std::min(kQueriesPerPass, num_queries - q0)) {
      case 1:
        fn(q0, std::integral_constant<size_t, 1>());
        break;
      case 2:
        fn(q0, std::integral_constant<size_t, 2>());
        break;
      case 3:
        fn(q0, std::integral_constant<size_t, 3>());
        break;
      default:
        fn(q0, std::integral_constant<size_t, 4>());
        break;
    }
  }
}

// Pointers to entry j0 of the score rows of queries [q0, q0 + G): scores is [num_queries, visible].
template <size_t G>
HWY_INLINE void ScoreRowsAt(float* scores, size_t visible, size_t q0, size_t j0, float* (&out)[G]) {
  for (size_t g = 0; g < G; ++g) out[g] = scores + (q0 + g) * visible + j0;
}

// scores [num_queries, visible] = the queries' scores over the rows, a key block at a time (every group of
// queries finishing a block before the next).
template <class B>
void LatentScoresImpl(const float* const* queries, size_t num_queries, const B* const* rows, size_t visible,
                      size_t width, float scale, float* scores) {
  for (size_t j0 = 0; j0 < visible; j0 += kKeysPerBlock) {
    const size_t keys = std::min(kKeysPerBlock, visible - j0);
    ForEachQueryGroup(num_queries, [&](size_t q0, auto group) HWY_ATTR {
      constexpr size_t G = decltype(group)::value;
      float* block_scores[G];
      ScoreRowsAt<G>(scores, visible, q0, j0, block_scores);
      LatentScoresPass<G>(queries + q0, rows + j0, keys, visible - j0, width, scale, q0 == 0, block_scores);
    });
  }
}

void LatentAttentionBf16QueriesImpl(const float* const* queries, size_t num_queries, const bf16* const* rows,
                                    size_t visible, size_t width, size_t ctx_width, float scale,
                                    float* scores, float* const* ctx, float* max, float* sum) {
  LatentScoresImpl(queries, num_queries, rows, visible, width, scale, scores);  // 1. scores
  for (size_t g = 0; g < num_queries; ++g) {                                    // 2. softmax over all keys
    SoftmaxStatsImpl(scores + g * visible, visible, max == nullptr ? nullptr : max + g,
                     sum == nullptr ? nullptr : sum + g);
    std::fill(ctx[g], ctx[g] + ctx_width, 0.0f);
  }
  for (size_t j0 = 0; j0 < visible; j0 += kKeysPerBlock) {  // 3. context sums, a key block at a time
    const size_t keys = std::min(kKeysPerBlock, visible - j0);
    ForEachQueryGroup(num_queries, [&](size_t q0, auto group) HWY_ATTR {
      constexpr size_t G = decltype(group)::value;
      float* block_p[G];
      ScoreRowsAt<G>(scores, visible, q0, j0, block_p);
      LatentContextPass<G>(block_p, rows + j0, keys, ctx_width, ctx + q0);
    });
  }
}

#endif  // HWY_HAVE_SCALABLE

void LatentScoresF32Impl(const float* const* queries, size_t num_queries, const float* const* rows,
                         size_t visible, size_t width, float scale, float* scores) {
  LatentScoresImpl(queries, num_queries, rows, visible, width, scale, scores);
}
void LatentScoresBf16Impl(const float* const* queries, size_t num_queries, const bf16* const* rows,
                          size_t visible, size_t width, float scale, float* scores) {
  LatentScoresImpl(queries, num_queries, rows, visible, width, scale, scores);
}

}  // namespace k3::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // K3_KERNELS_OPS_INL_H_
