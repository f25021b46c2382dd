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

#endif  // __x86_64__
