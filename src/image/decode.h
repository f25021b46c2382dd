// Image decoding with Debian's libraries (libpng, libjpeg-turbo, libwebp, giflib): format sniffed from
// the magic bytes, size limits checked from the header before any pixel buffer is allocated, every
// failure an InvalidArgument whose message a user can act on.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/image/decoded_image.h"

namespace k3::image {

struct DecodeLimits {
  int64_t max_bytes = 32 << 20;        // encoded size
  int64_t max_pixels = 7168LL * 7168;  // width * height, read from the header before decoding
  int max_side = 32768;                // either side
};

// The defaults above: 32 MiB (the reference server's per-image file limit) and the largest square
// K3's one-side limit describes (512 * 14 = 7168 px a side, 51.4 MP; decoded RGBA ~205 MB).
DecodeLimits DefaultDecodeLimits();

enum class ImageFormat { kUnknown, kPng, kJpeg, kWebp, kGif };
const char* FormatName(ImageFormat format);  // "png", "jpeg", "webp", "gif", "unknown"

// From the magic bytes. kUnknown for anything else (SVG, BMP, TIFF, HEIC, text...).
ImageFormat SniffFormat(std::span<const uint8_t> bytes);

// Checks a declared MIME type (a data URL's, or an HTTP Content-Type) against the sniffed format.
// Empty and application/octet-stream declare nothing. image/svg+xml, other image types and non-image
// types are refused with a message naming them.
Status CheckDeclaredMime(std::string_view mime_type, ImageFormat sniffed);

// Decodes the first frame. Refuses unknown formats (naming SVG, BMP, TIFF, HEIF/AVIF when it sees
// them), images over the limits, truncated and corrupt files.
Result<DecodedImage> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits);

// Shared by the decoders: the header's size against the limits (message names the format).
Status CheckImageSize(const char* format, int64_t width, int64_t height, const DecodeLimits& limits);

}  // namespace k3::image
