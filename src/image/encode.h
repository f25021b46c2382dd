// Encoders for images k3 sends rather than receives (`k3 verify`'s vision check, `k3 bench --images`):
// 8-bit RGB pixels to PNG (libpng) or baseline JPEG (libjpeg-turbo), and to a data: URL, plus the
// seeded random pixels vLLM's random-mm dataset style calls for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace k3::image {

enum class EncodeFormat { kPng, kJpeg };
const char* EncodeMimeType(EncodeFormat format);  // "image/png" | "image/jpeg"

// rgb: [height, width, 3]. InvalidArgument for a side < 1, a side over 65,535 (both formats' limit) or a
// buffer of the wrong size; Internal when the library reports an error.
Result<std::string> EncodePng(const std::vector<uint8_t>& rgb, int width, int height);
Result<std::string> EncodeJpeg(const std::vector<uint8_t>& rgb, int width, int height, int quality = 90);
Result<std::string> EncodeImage(EncodeFormat format, const std::vector<uint8_t>& rgb, int width, int height);

// "data:image/png;base64,..." of the encoded bytes.
std::string ToDataUrl(EncodeFormat format, const std::string& encoded);

// [height, width, 3] uniformly random bytes from a seeded generator (same seed, same pixels).
std::vector<uint8_t> RandomRgb(int width, int height, uint64_t seed);

}  // namespace k3::image
