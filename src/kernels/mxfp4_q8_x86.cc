// The x86-64 MXFP4 x int8 kernels (mxfp4_q8.h): one copy of mxfp4_q8_x86-inl.h per instruction set.
// Compiled with the baseline flags; only these functions carry target attributes, and mxfp4_q8.cc calls
// each only on a CPU that has its instructions.
//   avx2         VPMADDUBSW (u8 x s8 -> pairs of int16) then VPMADDWD with ones (-> int32): the sign trick
//                keeps every pair sum within int16 (2 * 12 * 127)
//   avx_vnni     VPDPBUSD, VEX-encoded (AVX-VNNI: Alder Lake, Zen 5)
//   avx512_vnni  VPDPBUSD, EVEX-encoded on 256-bit vectors (AVX512_VNNI + VL: Cascade Lake, Ice Lake,
//                Zen 4). 256 bits, as the others: a group is 32 bytes, and at decode the kernel waits on
//                memory, not on the dot products.
#include "src/kernels/mxfp4_q8.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "src/kernels/mxfp4_q8_driver-inl.h"
#include "src/kernels/mxfp4_tables.h"

#define K3_Q8_NAMESPACE avx2
#define K3_Q8_TARGET __attribute__((target("avx2")))
#define K3_Q8_DOT(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
#include "src/kernels/mxfp4_q8_x86-inl.h"
#undef K3_Q8_NAMESPACE
#undef K3_Q8_TARGET
#undef K3_Q8_DOT

#define K3_Q8_NAMESPACE avx_vnni
#define K3_Q8_TARGET __attribute__((target("avx2,avxvnni")))
#define K3_Q8_DOT(u, s) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s)
#include "src/kernels/mxfp4_q8_x86-inl.h"
#undef K3_Q8_NAMESPACE
#undef K3_Q8_TARGET
#undef K3_Q8_DOT

#define K3_Q8_NAMESPACE avx512_vnni
#define K3_Q8_TARGET __attribute__((target("avx2,avx512f,avx512vl,avx512vnni")))
#define K3_Q8_DOT(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
#include "src/kernels/mxfp4_q8_x86-inl.h"
#undef K3_Q8_NAMESPACE
#undef K3_Q8_TARGET
#undef K3_Q8_DOT

// ---- the quantiser (AVX2), bit for bit scalar::QuantizeRowsQ8 ----------------------------------------
// amax: a running lane-wise max of |x| that takes the accumulator as MAXPS's second operand, so a NaN input
// is never taken (as std::max in the definition). Then the same fp32 multiply, the same add and subtract of
// 1.5 * 2^23 (round to nearest even), NaN to 0 and the clamp, lane by lane. The slot order (even elements,
// then odd ones) comes from the packs: each packing instruction works per 128-bit lane, so permuting every
// int32 vector to [e0, e2, e4, e6, e1, e3, e5, e7] first lands element 2 s in byte s and 2 s + 1 in 16 + s.
namespace k3::kernels::q8::avx2 {

__attribute__((target("avx2"))) void QuantizeGroups(const float* x, size_t groups, int8_t* values,
                                                    float* scales) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  for (size_t g = 0; g < groups; ++g) {
    const float* group = x + g * kQ8Group;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (size_t i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(group + 8 * i);
      amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), amax);  // NaN in the first operand: amax kept
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    float inverse;
    int8_t* q = values + g * kQ8Group;
    if (!GroupScale(_mm_cvtss_f32(m4), scales + g, &inverse)) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_setzero_si256());
      continue;
    }
    const __m256 multiplier = _mm256_set1_ps(inverse);
    __m256i ints[4];
    for (size_t i = 0; i < 4; ++i) {
      __m256 r = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(v[i], multiplier), magic), magic);
      r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));  // NaN -> 0
      r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
      ints[i] = _mm256_permutevar8x32_epi32(_mm256_cvtps_epi32(r), order);
    }
    const __m256i bytes =
        _mm256_packs_epi16(_mm256_packs_epi32(ints[0], ints[1]), _mm256_packs_epi32(ints[2], ints[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), bytes);
  }
}

}  // namespace k3::kernels::q8::avx2

#endif  // __x86_64__
