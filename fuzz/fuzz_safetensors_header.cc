// Fuzzes SafetensorsFile::Parse with arbitrary file images: it must return a Status or a file whose every
// tensor lies inside the input (each view's first and last byte is read, so ASan catches a bad range).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "src/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = k3::io::SafetensorsFile::Parse(data, size, "fuzz.safetensors");
  if (!file.ok()) {
    if (file.status().message().empty()) std::abort();  // every error must explain itself
    return 0;
  }
  volatile uint8_t sink = 0;
  for (const auto& [name, view] : (*file)->tensors()) {
    if (view.nbytes != static_cast<size_t>(view.numel()) * k3::io::DTypeSize(view.dtype)) std::abort();
    if (view.data < data || view.data + view.nbytes > data + size) std::abort();
    if (view.nbytes > 0) sink = sink + view.data[0] + view.data[view.nbytes - 1];
  }
  (void)sink;
  return 0;
}
