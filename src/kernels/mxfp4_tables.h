// Lookup tables of MXFP4's codes and scales (spec §3.3) for the matmul kernels that decode by table
// (matmul-inl.h's AVX2 and NEON weight policies, mxfp4_bfdot.cc, the int8 kernels of mxfp4_q8.h): built
// once from the scalar definitions
// of ops.h (E2M1ToFloat, E8M0ToFloat), so every kernel decodes exactly what the references do.
#pragma once

#include <cstdint>
#include <cstring>

#include "src/base/bf16.h"
#include "src/kernels/ops.h"

namespace k3::kernels {

struct Mxfp4LookupTables {
  float e8m0[256];                    // scale byte s -> 2^(s - 127) (E8M0ToFloat): one load per group
  float e8m0_half[256];               // ... halved, 2^(s - 128): the scale of the doubled codes below
  alignas(16) int8_t e2m1_x2[16];     // E2M1 code -> 2 E2M1ToFloat(code), an integer in [-12, 12]
  alignas(16) uint8_t bf16_low[16];   // E2M1 code -> low byte of its value's bf16 pattern
  alignas(16) uint8_t bf16_high[16];  // ... and the high byte (byte-shuffle tables)
  alignas(16) uint8_t fp16_high[16];  // E2M1 code -> high byte of its value's fp16 pattern (the low byte
                                      // is zero: one mantissa bit, exponents -1..2)
  Mxfp4LookupTables() {
    for (uint32_t s = 0; s < 256; ++s) {
      e8m0[s] = E8M0ToFloat(static_cast<uint8_t>(s));
      e8m0_half[s] = e8m0[s] * 0.5f;  // exact: 2^-128 is a denormal, inf stays inf
    }
    for (uint8_t code = 0; code < 16; ++code) {
      const float value = E2M1ToFloat(code);
      e2m1_x2[code] = static_cast<int8_t>(2.0f * value);
      const uint16_t bf16_bits = FloatToBf16(value).bits;
      bf16_low[code] = static_cast<uint8_t>(bf16_bits & 0xFF);
      bf16_high[code] = static_cast<uint8_t>(bf16_bits >> 8);
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof(bits));
      const uint32_t exponent = (bits >> 23) & 0xFF;  // 0 for +-0, else 126..129: normal in fp16
      const uint32_t fp16_bits = ((bits >> 16) & 0x8000) |
                                 (exponent == 0 ? 0 : ((exponent - 127 + 15) << 10) | ((bits >> 13) & 0x3FF));
      fp16_high[code] = static_cast<uint8_t>(fp16_bits >> 8);
    }
  }
};

inline const Mxfp4LookupTables& Mxfp4Tables() {
  static const Mxfp4LookupTables tables;
  return tables;
}

}  // namespace k3::kernels
