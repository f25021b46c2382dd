// ListVisionTensors: the vision tower's and projector's tensors from config.json's vision_config, with the
// official checkpoint's names (no "language_model." prefix; docs/formats.md "Vision tower").
#include <fmt/format.h>

#include "src/model/tensors.h"

namespace k3::model {

std::string VisionBlockTensorName(int64_t block, const std::string& suffix) {
  return fmt::format("vision_tower.encoder.blocks.{}.{}", block, suffix);
}

std::vector<TensorSpec> ListVisionTensors(const io::ModelConfig& cfg) {
  std::vector<TensorSpec> out;
  if (!cfg.vision.has_value()) return out;
  const io::VisionConfig& v = *cfg.vision;
  using io::DType;
  auto add = [&](std::string name, std::vector<int64_t> shape, InitKind init, int64_t fan_in) {
    out.push_back(TensorSpec{std::move(name), std::move(shape), DType::kBF16, {DType::kBF16}, init, fan_in});
  };
  const int64_t h = v.hidden_size, p = v.patch_size;
  // Conv2d(3 -> h, kernel = stride = p, no bias): a Linear over the [3, p, p] patch values.
  add("vision_tower.patch_embed.proj.weight", {h, 3, p, p}, InitKind::kLinear, v.patch_values());
  add("vision_tower.patch_embed.pos_emb.weight", {v.pos_emb_height, v.pos_emb_width, h}, InitKind::kEmbedding,
      0);
  for (int64_t b = 0; b < v.num_layers; ++b) {
    add(VisionBlockTensorName(b, "norm0.weight"), {h}, InitKind::kNormWeight, 0);
    add(VisionBlockTensorName(b, "wqkv.weight"), {3 * v.qkv_hidden_size, h}, InitKind::kLinear, h);
    add(VisionBlockTensorName(b, "wo.weight"), {h, v.qkv_hidden_size}, InitKind::kLinear, v.qkv_hidden_size);
    add(VisionBlockTensorName(b, "norm1.weight"), {h}, InitKind::kNormWeight, 0);
    add(VisionBlockTensorName(b, "mlp.fc0.weight"), {v.intermediate_size, h}, InitKind::kLinear, h);
    add(VisionBlockTensorName(b, "mlp.fc1.weight"), {h, v.intermediate_size}, InitKind::kLinear,
        v.intermediate_size);
  }
  add("vision_tower.encoder.final_layernorm.weight", {h}, InitKind::kNormWeight, 0);
  const int64_t merged = v.merged_width();
  add("mm_projector.proj.0.weight", {merged, merged}, InitKind::kLinear, merged);
  add("mm_projector.proj.2.weight", {v.text_hidden_size, merged}, InitKind::kLinear, merged);
  add("mm_projector.post_norm.weight", {v.text_hidden_size}, InitKind::kNormWeight, 0);
  return out;
}

}  // namespace k3::model
