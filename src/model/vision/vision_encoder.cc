// VisionEncoder (vision_encoder.h): VisionTower::Encode with the grid checked and the rows as bf16 bits.
#include "src/model/vision/vision_encoder.h"

#include "src/kernels/ops.h"

namespace k3::model {

int64_t VisionEncoder::patch_values() const {
  const int64_t p = tower_->config().patch_size;
  return 3 * p * p;
}

int64_t VisionEncoder::output_width() const { return tower_->config().text_hidden_size; }

int64_t VisionEncoder::OutputTokens(int64_t grid_h, int64_t grid_w) const {
  const io::VisionConfig& cfg = tower_->config();
  if (grid_h < 1 || grid_w < 1 || grid_h > VisionTower::kMaxGridSide || grid_w > VisionTower::kMaxGridSide ||
      grid_h % cfg.merge_kernel_height != 0 || grid_w % cfg.merge_kernel_width != 0)
    return 0;
  return tower_->OutputTokens(static_cast<int>(grid_h), static_cast<int>(grid_w));
}

Status VisionEncoder::Encode(std::span<const float> patches, int64_t grid_h, int64_t grid_w,
                             std::vector<uint16_t>* rows) {
  const int64_t tokens = OutputTokens(grid_h, grid_w);
  if (tokens == 0) return InvalidArgument("the vision tower cannot take a {}x{} patch grid", grid_h, grid_w);
  if (static_cast<int64_t>(patches.size()) != grid_h * grid_w * patch_values())
    return InvalidArgument("{} patch values for a {}x{} grid", patches.size(), grid_h, grid_w);
  const int64_t width = output_width();
  out_.resize(static_cast<size_t>(tokens * width));
  K3_RETURN_IF_ERROR(
      tower_->Encode(patches.data(), static_cast<int>(grid_h), static_cast<int>(grid_w), out_.data(), pool_));
  // The tower's values are bf16 already (rounded by its final norm), so this conversion is exact.
  rows->resize(out_.size());
  kernels::F32ToBf16(out_.data(), out_.size(), reinterpret_cast<bf16*>(rows->data()));
  return OkStatus();
}

std::vector<std::span<const uint8_t>> VisionEncoder::ViewedStorage() const {
  std::vector<std::span<const uint8_t>> out;
  auto add = [&out](const Bf16Matrix& m) {
    if (m.data != nullptr && m.rows * m.cols > 0)
      out.emplace_back(reinterpret_cast<const uint8_t*>(m.data), static_cast<size_t>(m.rows * m.cols) * 2);
  };
  const VisionWeights& w = tower_->weights();
  add(w.patch_embed);
  for (const VisionBlockWeights& block : w.blocks) {
    for (const Bf16Matrix* m : {&block.wqkv, &block.wo, &block.fc0, &block.fc1}) add(*m);
  }
  add(w.proj0);
  add(w.proj2);
  return out;
}

}  // namespace k3::model
