// Kimi K3's image processor: decode, resize with Pillow's antialiased bicubic (K3's never-upscaling
// rule), composite transparency over the configured background, pad right / bottom with black,
// normalise and cut into channel-first patches. Equal to the checkpoint's Python processor on Pillow
// within 1/255 per value (tests/image/compare_pillow.py).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/image/config.h"
#include "src/image/decode.h"
#include "src/image/decoded_image.h"
#include "src/image/geometry.h"

namespace k3::image {

struct ProcessedImage {
  ImageGeometry geometry;
  std::string format;  // "png" | "jpeg" | "webp" | "gif"
  // [grid_h * grid_w, 3 * patch * patch]: patches in raster order, each channel-first [3, p, p],
  // normalised ((x / 255 - mean) / std; padding is x = 0).
  std::vector<float> patches;
};

// Decodes `bytes` and runs the processor. `declared_mime` (optional) is checked against the bytes.
Result<ProcessedImage> ProcessImage(std::span<const uint8_t> bytes, const ProcessorConfig& config,
                                    const DecodeLimits& limits, std::string_view declared_mime = {});

// The steps after decoding, for callers that already hold a DecodedImage.
ProcessedImage ProcessDecoded(const DecodedImage& image, const ProcessorConfig& config);

// The processed image as 8-bit RGB before normalisation: [resized_height, resized_width, 3] (what the
// reference has right before np.pad). ProcessDecoded is this plus pad / normalise / patchify.
std::vector<uint8_t> ResizedRgb(const DecodedImage& image, const ImageGeometry& geometry,
                                const ProcessorConfig& config);

}  // namespace k3::image
