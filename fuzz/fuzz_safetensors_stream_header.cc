// Fuzzes the safetensors header check on streamed input (SafetensorsFile::ParseHeader, used by
// `k3 weights verify` on object storage, which reads only the first 8 + N bytes of a shard): the first
// 8 input bytes are the claimed object size, the rest the bytes read from its start. It must return a
// Status or tensors that all lie inside the claimed size, without touching data it was not given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "src/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t claimed = 0;
  std::memcpy(&claimed, data, 8);
  const uint8_t* prefix = data + 8;
  const size_t available = size - 8;
  if (claimed < available) claimed = available;  // the prefix is the start of the object
  auto header_len = k3::io::SafetensorsFile::HeaderLength(prefix, available, claimed, "fuzz.safetensors");
  if (!header_len.ok()) {
    if (header_len.status().message().empty()) std::abort();
    return 0;
  }
  if (available < 8 + *header_len) return 0;  // verify reads exactly that many bytes first
  auto file = k3::io::SafetensorsFile::ParseHeader(prefix, available, claimed, "fuzz.safetensors");
  if (!file.ok()) {
    if (file.status().message().empty()) std::abort();
    return 0;
  }
  const uint64_t data_size = claimed - 8 - *header_len;
  for (const auto& [name, view] : (*file)->tensors()) {
    if (view.nbytes != static_cast<size_t>(view.numel()) * k3::io::DTypeSize(view.dtype)) std::abort();
    if (view.nbytes > data_size) std::abort();
    if (claimed > available && view.data != nullptr) std::abort();  // no pointer past what was given
  }
  return 0;
}
