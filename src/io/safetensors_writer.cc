// WriteSafetensors: one safetensors file from in-memory tensors, in the layout the reference (Rust)
// implementation writes: u64 little-endian header length, the JSON header padded with spaces to a
// multiple of 8 bytes, then the tensors back to back. Tensors are laid out largest element size first
// (stable otherwise), so with the 8-aligned data area every tensor starts aligned to its element size.
#include <algorithm>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "src/io/atomic_file.h"
#include "src/io/safetensors.h"

namespace k3::io {

Status CheckTensorToWrite(const std::string& path, const TensorToWrite& tensor) {
  if (tensor.name.empty() || tensor.name == "__metadata__") {
    return InvalidArgument("{}: tensor name '{}' is reserved or empty; fix: rename the tensor", path,
                           tensor.name);
  }
  if (DTypeSize(tensor.dtype) == 0) {
    return InvalidArgument("{}: tensor '{}' has no valid dtype; fix: set TensorToWrite::dtype", path,
                           tensor.name);
  }
  uint64_t numel = 1;
  for (int64_t d : tensor.shape) {
    if (d < 0 || __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel)) {
      return InvalidArgument("{}: tensor '{}' has invalid shape [{}]; fix: use non-negative dims", path,
                             tensor.name, fmt::join(tensor.shape, ", "));
    }
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, DTypeSize(tensor.dtype), &nbytes) || nbytes != tensor.data.size()) {
    return InvalidArgument(
        "{}: tensor '{}' ({} [{}]) needs {} bytes but holds {}; fix: fill exactly "
        "product(shape) x dtype size bytes",
        path, tensor.name, DTypeName(tensor.dtype), fmt::join(tensor.shape, ", "), nbytes,
        tensor.data.size());
  }
  return OkStatus();
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> names;
  for (const TensorToWrite& tensor : tensors) {
    K3_RETURN_IF_ERROR(CheckTensorToWrite(path, tensor));
    if (!names.insert(tensor.name).second) {
      return InvalidArgument("{}: tensor '{}' given twice; fix: write each tensor once", path, tensor.name);
    }
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return DTypeSize(tensors[a].dtype) > DTypeSize(tensors[b].dtype);
  });

  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (size_t i : order) {
    const TensorToWrite& tensor = tensors[i];
    header[tensor.name] = {{"dtype", DTypeName(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + tensor.data.size()}}};
    offset += tensor.data.size();
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  uint8_t length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<uint8_t>(uint64_t{header_text.size()} >> (8 * i));

  K3_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  K3_RETURN_IF_ERROR(file->Write(length_bytes, sizeof(length_bytes)));
  K3_RETURN_IF_ERROR(file->Write(header_text.data(), header_text.size()));
  for (size_t i : order) K3_RETURN_IF_ERROR(file->Write(tensors[i].data.data(), tensors[i].data.size()));
  return file->Commit();
}

}  // namespace k3::io
