// CacheDtype: how the MLA latent cache stores its values (spec §6 "Numbers for a memory planner").
//   kBf16  2 bytes a value: the reference's layout and the default (`--kv-cache-dtype auto|bfloat16`);
//   kF32   4 bytes a value (`--kv-cache-dtype fp32`): twice the memory, for debugging and comparisons.
// The latent rows hold bf16 values either way (c comes out of a bf16-rounding RMSNorm, k_pe out of a
// bf16-rounding projection), so both give the same logits; only the bytes per token differ.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace k3::model {

enum class CacheDtype : uint8_t { kBf16 = 0, kF32 = 1 };

inline int64_t CacheDtypeBytes(CacheDtype dtype) { return dtype == CacheDtype::kF32 ? 4 : 2; }
inline const char* CacheDtypeName(CacheDtype dtype) { return dtype == CacheDtype::kF32 ? "fp32" : "bf16"; }
// The `--kv-cache-dtype` values: auto, bfloat16 and bf16 are kBf16, fp32 and float32 kF32; else nullopt.
inline std::optional<CacheDtype> ParseCacheDtype(std::string_view name) {
  if (name == "auto" || name == "bfloat16" || name == "bf16") return CacheDtype::kBf16;
  if (name == "fp32" || name == "float32") return CacheDtype::kF32;
  return std::nullopt;
}

}  // namespace k3::model
