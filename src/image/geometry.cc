// PlanGeometry: the reference's navit_resize_image, in the same floating-point steps.
#include "src/image/geometry.h"

#include <algorithm>
#include <cmath>

namespace k3::image {

ImageGeometry PlanGeometry(ImageSize original, const ProcessorConfig& config) {
  ImageGeometry g;
  g.width = std::max(1, original.width);
  g.height = std::max(1, original.height);
  const int p = config.patch_size;
  const double w = g.width, h = g.height;
  // Python: max(1.0, width // patch_size) * max(1.0, height // patch_size), in double.
  const double patches =
      std::max(1.0, static_cast<double>(g.width / p)) * std::max(1.0, static_cast<double>(g.height / p));
  const double s1 = std::sqrt(static_cast<double>(config.in_patch_limit) / patches);
  const double side_px = static_cast<double>(config.patch_limit_on_one_side) * p;
  const double s2 = side_px / w;
  const double s3 = side_px / h;
  const double scale = std::min({1.0, s1, s2, s3});
  const int max_side = config.patch_limit_on_one_side * p;
  // int() truncates toward zero; both products are positive.
  g.resized_width = std::min(std::max(1, static_cast<int>(w * scale)), max_side);
  g.resized_height = std::min(std::max(1, static_cast<int>(h * scale)), max_side);
  const int factor_w = config.merge_kernel[1] * p;
  const int factor_h = config.merge_kernel[0] * p;
  g.padded_width = (g.resized_width + factor_w - 1) / factor_w * factor_w;
  g.padded_height = (g.resized_height + factor_h - 1) / factor_h * factor_h;
  g.grid_w = g.padded_width / p;
  g.grid_h = g.padded_height / p;
  g.num_tokens = config.fixed_output_tokens.has_value()
                     ? *config.fixed_output_tokens
                     : static_cast<int64_t>(g.padded_height / factor_h) * (g.padded_width / factor_w);
  return g;
}

}  // namespace k3::image
