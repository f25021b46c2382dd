// The per-format decoders behind DecodeImage (internal to k3_image). Each checks the header's size
// against the limits before allocating pixels and returns InvalidArgument for bad input.
#pragma once

#include <cstdint>
#include <span>

#include "src/base/status.h"
#include "src/image/decode.h"
#include "src/image/decoded_image.h"

namespace k3::image::internal {

Result<DecodedImage> DecodePng(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Result<DecodedImage> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Result<DecodedImage> DecodeWebp(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Result<DecodedImage> DecodeGif(std::span<const uint8_t> bytes, const DecodeLimits& limits);

}  // namespace k3::image::internal
