// bfloat16 storage type and exact conversions.
//
// BF16 is the top 16 bits of an IEEE fp32. FloatToBf16 rounds to nearest, ties to even (what PyTorch's
// `.to(torch.bfloat16)` does); NaN stays NaN (quiet). RoundBf16(x) is FloatToBf16 then back: the value
// PyTorch would hold after casting an fp32 result to bf16, used wherever the reference rounds (spec §2.0).
#pragma once

#include <cstdint>
#include <cstring>

namespace k3 {

struct bf16 {
  uint16_t bits;
};
static_assert(sizeof(bf16) == 2);

inline float Bf16ToFloat(bf16 v) {
  uint32_t u = uint32_t{v.bits} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline bf16 FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};  // quiet NaN
  }
  const uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<uint16_t>((u + rounding_bias) >> 16)};
}

inline float RoundBf16(float f) { return Bf16ToFloat(FloatToBf16(f)); }

}  // namespace k3
