// ImageEncoder: what the engine needs of a vision tower (vision.md §3): normalised patches of one image in,
// the rows that replace its <|media_pad|> embeddings out. The MoonViT tower + merger + projector
// (src/model/vision/) implements it; Model::image_encoder() hands it out when the checkpoint has one.
//
// Shapes: patches [grid_h * grid_w, patch_values()] (raster order of patches, each channel-first
// [3, p, p]); rows [OutputTokens(grid_h, grid_w), output_width()] as bf16 bits (the tower's output is
// bf16-rounded, as the reference's, so nothing is lost).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/status.h"

namespace k3::model {

class ImageEncoder {
 public:
  virtual ~ImageEncoder() = default;
  // Values of one patch (3 * patch * patch).
  virtual int64_t patch_values() const = 0;
  // Width of an output row: the text model's hidden size.
  virtual int64_t output_width() const = 0;
  // Rows one image of grid_h x grid_w patches encodes to (after the merge); 0 for a grid the tower cannot
  // take (not a multiple of the merge kernel).
  virtual int64_t OutputTokens(int64_t grid_h, int64_t grid_w) const = 0;
  // Encodes one image. InvalidArgument for a grid or patch count that does not fit.
  virtual Status Encode(std::span<const float> patches, int64_t grid_h, int64_t grid_w,
                        std::vector<uint16_t>* rows) = 0;
};

}  // namespace k3::model
