// The x86-64 MXFP4 x int8 tile (mxfp4_q8.h), included by mxfp4_q8_x86.cc once per instruction set with
//   K3_Q8_NAMESPACE  the namespace of this copy (avx2, avx_vnni, avx512_vnni)
//   K3_Q8_TARGET     its target attribute
//   K3_Q8_DOT(u, s)  8 int32 sums of 4 adjacent products u8 x s8 (u: |w| <= 12, s: x with w's sign)
// No include guard: each inclusion defines one copy.
//
// A group (32 values) of a weight row is 16 packed bytes: one 128-bit load, a shift and a mask give the low
// nibbles (even elements) and the high ones (odd elements) side by side in a 256-bit vector, and one byte
// shuffle (VPSHUFB) looks up the doubled E2M1 integers, in the Q8 layout's slot order. The unsigned x signed
// byte products take |w| and x with w's sign (VPSIGNB: the sign trick; |x| <= 127, so negating is exact).
// The 8 int32 partial sums of a tile row's 4 weight rows are summed exactly by three horizontal adds and one
// add into the 4 group dots [n0, n1, n2, n3], and one 128-bit fp32 accumulator per x row takes
// acc + float(dot) * (d * h): y[m, n] lives in lane n - n0 (the definition, lane for lane).
//
// Per group at M = 1: ~6 instructions to decode each of 4 weight rows, 3 (VNNI: 2) per dot product, 5 to
// sum, 4 in fp32, and the 4 scale look-ups.

namespace k3::kernels::q8::K3_Q8_NAMESPACE {
namespace {

// Group g of a weight row as 32 doubled E2M1 integers, slots in the Q8 layout.
K3_Q8_TARGET inline __m256i DecodeGroup(const uint8_t* packed_group, __m256i table) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_group));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(bytes), _mm_srli_epi16(bytes, 4), 1);
  return _mm256_shuffle_epi8(table, _mm256_and_si256(both, _mm256_set1_epi8(0x0F)));
}

// The exact dots [d0, d1, d2, d3] of x with four decoded weight groups (w, |w|).
K3_Q8_TARGET inline __m128i GroupDots4(__m256i x, const __m256i (&w)[4], const __m256i (&abs_w)[4]) {
  __m256i partial[4];
#pragma GCC unroll 4
  for (size_t j = 0; j < 4; ++j) partial[j] = K3_Q8_DOT(abs_w[j], _mm256_sign_epi8(x, w[j]));
  const __m256i sums =
      _mm256_hadd_epi32(_mm256_hadd_epi32(partial[0], partial[1]), _mm256_hadd_epi32(partial[2], partial[3]));
  return _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
}

template <size_t kM, bool kPrefetch>
K3_Q8_TARGET void RunTile(const Q8Tile& t, size_t groups) {
  const Mxfp4LookupTables& tables = Mxfp4Tables();
  const float* half = tables.e8m0_half;
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(tables.e2m1_x2)));
  __m128 acc[kM];
#pragma GCC unroll 4
  for (size_t i = 0; i < kM; ++i) acc[i] = _mm_setzero_ps();
  size_t other_offset = 0;
  for (size_t g = 0; g < groups; ++g) {
    if constexpr (kPrefetch) PrefetchGroup(t, g, &other_offset);
    __m256i w[4], abs_w[4];
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) {
      w[j] = DecodeGroup(t.packed[j] + g * 16, table);
      abs_w[j] = _mm256_abs_epi8(w[j]);
    }
    const __m128 h =
        _mm_setr_ps(half[t.scales[0][g]], half[t.scales[1][g]], half[t.scales[2][g]], half[t.scales[3][g]]);
#pragma GCC unroll 4
    for (size_t i = 0; i < kM; ++i) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.x_values[i] + g * kQ8Group));
      const __m128 dots = _mm_cvtepi32_ps(GroupDots4(x, w, abs_w));
      const __m128 factor = _mm_mul_ps(_mm_set1_ps(t.x_scales[i][g]), h);
      acc[i] = _mm_add_ps(acc[i], _mm_mul_ps(dots, factor));
    }
  }
#pragma GCC unroll 4
  for (size_t i = 0; i < kM; ++i) {
    float lanes[kQ8TileN];
    _mm_storeu_ps(lanes, acc[i]);
    StoreTileRow(lanes, t.n_valid, t.y[i]);
  }
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

}  // namespace k3::kernels::q8::K3_Q8_NAMESPACE
