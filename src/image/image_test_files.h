// Test helpers: valid and hostile image files built in memory with the encoders of the same Debian
// libraries (zlib for hand-assembled PNG chunks, libjpeg, libwebp, giflib), so the tests need no blobs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace k3::image::testing {

using Bytes = std::vector<uint8_t>;

// Deterministic pixels: [h, w, channels].
Bytes Pattern(int width, int height, int channels, int seed);

// PNG from chunks: IHDR(width, height, bit_depth, color_type) + optional extra chunks + IDAT of
// `raw` (filter bytes included by the caller, or built from `pixels` with filter 0) + IEND.
std::string PngChunk(std::string_view type, std::string_view data);
Bytes PngWithHeader(uint32_t width, uint32_t height, int bit_depth, int color_type,
                    std::string_view idat_zlib, std::string_view extra_chunks = {});
Bytes Png(const Bytes& pixels, int width, int height, int color_type);  // 8-bit, filter 0
std::string Deflate(std::string_view raw, int level = 6);

Bytes Jpeg(const Bytes& rgb, int width, int height, bool progressive = false);
Bytes Webp(const Bytes& pixels, int width, int height, bool alpha, bool lossless);
// One frame, palette of 256 entries (index i = (i, 255 - i, i / 2)); `transparent` index or -1.
Bytes Gif(const Bytes& indices, int width, int height, int transparent, int screen_width = 0,
          int screen_height = 0);

}  // namespace k3::image::testing
