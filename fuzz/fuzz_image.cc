// Fuzzes the image upload path: a data: URL (when the input starts with "data:") or raw file bytes,
// through ParseDataUrl, the MIME check, the four decoders and K3's processor, with small limits. Every
// outcome must be a patch tensor whose shape matches its geometry and whose values are normalised
// pixels, or an InvalidArgument that explains itself.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "src/image/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace k3::image;
  DecodeLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_pixels = 512 * 512;
  limits.max_side = 4096;
  // Odd sizes use a small patch budget, so that most decodable inputs are also resized.
  ProcessorConfig config = K3ProcessorConfig();
  if (size % 2 == 1) config.in_patch_limit = 64;

  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::span<const uint8_t> bytes(data, size);
  std::string_view mime;
  k3::Result<DataUrl> url = k3::InvalidArgument("not a data URL");
  if (text.starts_with("data:")) {
    url = ParseDataUrl(text);
    if (!url.ok()) {
      if (url.status().message().empty() || url.status().code() != k3::StatusCode::kInvalidArgument)
        std::abort();
      return 0;
    }
    bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(url->bytes.data()), url->bytes.size());
    mime = url->mime_type;
  }
  auto out = ProcessImage(bytes, config, limits, mime);
  if (!out.ok()) {
    if (out.status().message().empty() || out.status().code() != k3::StatusCode::kInvalidArgument)
      std::abort();
    return 0;
  }
  const ImageGeometry& g = out->geometry;
  const int p = config.patch_size;
  if (g.width * static_cast<int64_t>(g.height) > limits.max_pixels) std::abort();
  if (g.resized_width > g.width || g.resized_height > g.height || g.resized_width < 1 || g.resized_height < 1)
    std::abort();
  if (g.grid_h * p != g.padded_height || g.grid_w * p != g.padded_width) std::abort();
  if (g.num_tokens != static_cast<int64_t>(g.grid_h / 2) * (g.grid_w / 2)) std::abort();
  if (out->patches.size() != static_cast<size_t>(g.grid_h) * g.grid_w * 3 * p * p) std::abort();
  for (float v : out->patches) {
    if (!(v >= -1.0f && v <= 1.0f)) std::abort();
  }
  return 0;
}
