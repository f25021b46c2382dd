// Tensor element types as safetensors names them ("BF16", "F32", "U8", ...), with their byte sizes.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace k3::io {

enum class DType { kBool, kU8, kI8, kI16, kU16, kI32, kU32, kI64, kU64, kF16, kBF16, kF32, kF64, kSentinel };

// Bytes per element (0 for kSentinel).
size_t DTypeSize(DType dtype);
// "BF16" etc. ("INVALID" for kSentinel).
std::string_view DTypeName(DType dtype);
// nullopt for a name safetensors does not define (or we do not support, e.g. F8 variants).
std::optional<DType> ParseDType(std::string_view name);

}  // namespace k3::io
