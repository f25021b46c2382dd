// The values of MXFP4's E8M0 group scales (spec §3.3) as a table, for the matmul kernels that read a scale
// per group (matmul-inl.h, mxfp4_bfdot.cc): one L1-resident load per group instead of building the float
// from its bits.
#pragma once

#include <cstdint>
#include <cstring>

namespace k3::kernels {

// E8M0 byte s -> 2^(s - 127) for every byte (s = 0 is the subnormal 2^-127, s = 255 is inf).
struct E8M0Table {
  float values[256];
  E8M0Table() {
    for (uint32_t s = 0; s < 256; ++s) {
      const uint32_t bits = s == 0 ? 0x00400000u : s << 23;
      std::memcpy(&values[s], &bits, sizeof(float));
    }
  }
};
inline const float* E8M0Values() {
  static const E8M0Table table;
  return table.values;
}

}  // namespace k3::kernels
