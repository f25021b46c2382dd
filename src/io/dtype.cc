// DType names and sizes, as the safetensors format defines them.
#include "src/io/dtype.h"

#include <iterator>

namespace k3::io {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

// Indexed by DType; every enumerator before kSentinel appears exactly once, in order.
constexpr DTypeInfo kDTypes[] = {
    {DType::kBool, "BOOL", 1}, {DType::kU8, "U8", 1},   {DType::kI8, "I8", 1},     {DType::kI16, "I16", 2},
    {DType::kU16, "U16", 2},   {DType::kI32, "I32", 4}, {DType::kU32, "U32", 4},   {DType::kI64, "I64", 8},
    {DType::kU64, "U64", 8},   {DType::kF16, "F16", 2}, {DType::kBF16, "BF16", 2}, {DType::kF32, "F32", 4},
    {DType::kF64, "F64", 8},
};
static_assert(std::size(kDTypes) == static_cast<size_t>(DType::kSentinel));

constexpr bool TableInEnumOrder() {
  for (size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(TableInEnumOrder());

bool Valid(DType dtype) { return static_cast<size_t>(dtype) < static_cast<size_t>(DType::kSentinel); }

}  // namespace

size_t DTypeSize(DType dtype) { return Valid(dtype) ? kDTypes[static_cast<size_t>(dtype)].size : 0; }

std::string_view DTypeName(DType dtype) {
  return Valid(dtype) ? kDTypes[static_cast<size_t>(dtype)].name : std::string_view("INVALID");
}

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

}  // namespace k3::io
