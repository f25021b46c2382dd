// Pillow's resampling, re-implemented to give the same bytes (Pillow 9.4, libImaging/Resample.c and
// Geometry.c): antialiased bicubic (a = -0.5, support 2 widened by the reduction factor) as two
// separable passes, horizontal first; 8-bit images use 22-bit fixed-point coefficients and round and
// clip to uint8 between the passes; 32-bit integer images use double coefficients. Nearest neighbour
// is Pillow's affine scaling (palette and bilevel images always resize with it).
#pragma once

#include <cstdint>
#include <vector>

namespace k3::image {

// Interleaved 8-bit samples [height, width, channels] -> [out_h, out_w, channels]; each channel on
// its own (premultiply alpha before, as Pillow does for RGBA / LA).
std::vector<uint8_t> ResizeBicubic8(const std::vector<uint8_t>& in, int width, int height, int channels,
                                    int out_width, int out_height);
// One int32 per pixel (Pillow's mode "I").
std::vector<int32_t> ResizeBicubic32(const std::vector<int32_t>& in, int width, int height, int out_width,
                                     int out_height);
// Interleaved 8-bit samples, nearest neighbour.
std::vector<uint8_t> ResizeNearest8(const std::vector<uint8_t>& in, int width, int height, int channels,
                                    int out_width, int out_height);

}  // namespace k3::image
