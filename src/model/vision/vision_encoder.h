// VisionEncoder: the VisionTower as the engine's ImageEncoder (image_encoder.h): a grid's patches in,
// the rows that replace its <|media_pad|> embeddings out as bf16 bits, on the model's worker pool.
#pragma once

#include <memory>

#include "src/base/thread_pool.h"
#include "src/model/image_encoder.h"
#include "src/model/vision/vision_tower.h"

namespace k3::model {

class VisionEncoder final : public ImageEncoder {
 public:
  VisionEncoder(std::unique_ptr<VisionTower> tower, ThreadPool* pool)
      : tower_(std::move(tower)), pool_(pool) {}

  int64_t patch_values() const override;
  int64_t output_width() const override;
  // 0 for a grid the tower cannot take (a side not a multiple of the merge kernel, or above 512 patches).
  int64_t OutputTokens(int64_t grid_h, int64_t grid_w) const override;
  Status Encode(std::span<const float> patches, int64_t grid_h, int64_t grid_w,
                std::vector<uint16_t>* rows) override;

  const VisionTower& tower() const { return *tower_; }
  // The checkpoint bytes the tower's matrices view (Model::ViewedStorage adds them to the text model's).
  std::vector<std::span<const uint8_t>> ViewedStorage() const;

 private:
  std::unique_ptr<VisionTower> tower_;
  ThreadPool* pool_;
  std::vector<float> out_;  // [rows, width] of the last call
};

}  // namespace k3::model
