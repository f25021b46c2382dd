// K3's resize / pad / patch rule (the reference's navit_resize_image): from an upload's size to the
// resized and padded size, the patch grid and the number of image tokens. Touches no pixels, so the
// server can count prompt tokens without decoding.
#pragma once

#include <cstdint>

#include "src/image/config.h"

namespace k3::image {

struct ImageSize {
  int width = 0;
  int height = 0;
};

struct ImageGeometry {
  int width = 0, height = 0;                  // the upload (what "image {W}x{H}" names)
  int resized_width = 0, resized_height = 0;  // after the never-upscaling resize
  int padded_width = 0, padded_height = 0;    // right / bottom padding to a multiple of merge * patch
  int grid_h = 0, grid_w = 0;                 // patches: padded / patch_size
  int64_t num_tokens = 0;                     // (grid_h / merge_h) * (grid_w / merge_w), or fixed
};

// With L = in_patch_limit, p = patch_size, S = patch_limit_on_one_side:
//   scale = min(1, sqrt(L / (max(1, W // p) * max(1, H // p))), S*p / W, S*p / H)
//   resized = min(max(1, int(side * scale)), S*p) per side; padded up to a multiple of merge * p.
// `original` sides must be >= 1 (a caller's decoder guarantees it).
ImageGeometry PlanGeometry(ImageSize original, const ProcessorConfig& config);

}  // namespace k3::image
