// A decoded image in the pixel layout Pillow would hold for the same file, so that the processor can
// apply Pillow's mode-dependent rules (palette images resize with nearest neighbour, RGBA and LA
// resize premultiplied, 16-bit grey resizes as 32-bit integers, transparency keys).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace k3::image {

// Pillow's modes, as the decoders produce them.
enum class PixelMode {
  kBilevel,  // "1": one byte per pixel, 0 or 255 (1-bit grey PNG)
  kL,        // "L": grey
  kLA,       // "LA": grey + alpha (8-bit grey-alpha PNG)
  kP,        // "P": palette indices; `palette` holds RGBA (alpha from tRNS / GIF transparency)
  kRGB,
  kRGBA,
  kCMYK,  // JPEG CMYK / YCCK, already un-inverted the way Pillow does ("CMYK;I")
  kI32,   // "I": 16-bit grey PNG, one int32 per pixel in `wide`
};

int ChannelCount(PixelMode mode);  // samples per pixel in `pixels` (kI32: 0, it uses `wide`)
const char* ModeName(PixelMode mode);

struct DecodedImage {
  std::string format;  // "png" | "jpeg" | "webp" | "gif"
  PixelMode mode = PixelMode::kRGB;
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;             // [height, width, ChannelCount(mode)], row-major
  std::vector<int32_t> wide;               // [height, width] for kI32
  std::array<uint8_t, 256 * 4> palette{};  // kP: RGBA per index (unused entries are opaque black)
  // Pillow's info["transparency"]: a palette with alpha (kP), or a grey key (kBilevel / kL / kI32:
  // pixels equal to `transparent_key` become transparent when converted to RGBA).
  bool has_transparency = false;
  int32_t transparent_key = 0;
};

}  // namespace k3::image
