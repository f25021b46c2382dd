// VisionTower: Kimi K3's MoonViT encoder, sd2_tpool patch merger and patchmergerv2 projector (vision.md
// §3): the normalised patches of one image in, the rows that replace its <|media_pad|> embeddings out.
//
// Per image (N = grid_h * grid_w patches, h = vt_hidden_size, q = qkv_hidden_size, bf16 weights through
// MatMulBf16, activations rounded to bf16 where the official bf16 model rounds, spec k3-model.md §2.0):
//   x = bf16(patches) [N, 3*p*p] -> bf16(x W_patch^T) + bf16(bilinear(pos_grid -> grid_h x grid_w))
//   per block: t = RMSNorm0(x); qkv = t W_qkv^T [N, 3q] ([3, heads, head_dim]); 2-D RoPE on q, k (fp32,
//     rounded); attention over the image's N tokens, scale 1/sqrt(head_dim) (fp32 softmax, bf16 out);
//     x = bf16(x + o W_o^T); x = bf16(x + fc1(gelu_tanh(fc0(RMSNorm1(x)))))
//   final RMSNorm; merge each 2x2 neighbourhood in the order (0,0), (0,1), (1,0), (1,1) -> [N/4, 4h];
//   projector: RMSNorm_1e-5(proj.2(gelu_erf(proj.0(m)))) -> [N/4, text_hidden].
// The tower's RMSNorm eps is vision_config's (float32's epsilon by default; docs/formats.md).
// Images are independent: attention never crosses two images, so the caller encodes one image a call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/base/bf16.h"
#include "src/base/status.h"
#include "src/base/thread_pool.h"
#include "src/io/checkpoint.h"
#include "src/io/model_config.h"
#include "src/model/weights.h"

namespace k3::model {

// The tower's weights, bound to the checkpoint's bytes (matrices) or converted once (small vectors).
struct VisionBlockWeights {
  std::vector<bf16> norm0;  // [h]
  Bf16Matrix wqkv;          // [3q, h]
  Bf16Matrix wo;            // [h, q]
  std::vector<bf16> norm1;  // [h]
  Bf16Matrix fc0;           // [mlp, h]
  Bf16Matrix fc1;           // [h, mlp]
};

struct VisionWeights {
  Bf16Matrix patch_embed;       // [h, 3*p*p] (the Conv2d weight [h, 3, p, p] read as rows)
  std::vector<float> pos_grid;  // [pos_h, pos_w, h], the bf16 values widened
  std::vector<VisionBlockWeights> blocks;
  std::vector<bf16> final_norm;             // [h]
  Bf16Matrix proj0;                         // [4h, 4h]
  Bf16Matrix proj2;                         // [text_hidden, 4h]
  std::vector<bf16> post_norm;              // [text_hidden]
  std::vector<std::vector<uint8_t>> owned;  // copies of tensors the file left misaligned
};

class VisionTower {
 public:
  // The largest grid side the official 2-D RoPE table covers (Rope2DPosEmbRepeated(..., 512, 512)).
  static constexpr int kMaxGridSide = 512;
  static constexpr float kRopeTheta = 10000.0f;

  // Checks and binds every tensor of ListVisionTensors(cfg) found through `lookup` (errors name the
  // tensor; cfg must have a vision_config). `storage` keeps the tensors' bytes alive.
  static Result<std::unique_ptr<VisionTower>> FromTensors(const io::ModelConfig& cfg,
                                                          const TensorLookup& lookup,
                                                          std::shared_ptr<const void> storage);

  const io::VisionConfig& config() const { return cfg_; }
  const VisionWeights& weights() const { return weights_; }

  // Rows Encode writes for a grid_h x grid_w patch grid: (grid_h / 2) * (grid_w / 2) for K3's 2x2 merge.
  int64_t OutputTokens(int grid_h, int grid_w) const;
  // patches: [grid_h * grid_w, 3 * p * p] normalised pixels, patches in raster order, each channel-first
  // ([3, p, p]). out: [OutputTokens, text_hidden] fp32 holding bf16 values, in the order of the
  // <|media_pad|> tokens they replace. grid sides must be positive multiples of the merge kernel and at
  // most kMaxGridSide (InvalidArgument otherwise). `pool` may be nullptr.
  Status Encode(const float* patches, int grid_h, int grid_w, float* out, ThreadPool* pool) const;

 private:
  VisionTower(io::VisionConfig cfg, VisionWeights weights, std::shared_ptr<const void> storage)
      : cfg_(std::move(cfg)), weights_(std::move(weights)), storage_(std::move(storage)) {}

  io::VisionConfig cfg_;
  VisionWeights weights_;
  std::shared_ptr<const void> storage_;
};

// The tower of an opened checkpoint (kept alive by the tower). cfg: the checkpoint's config.json; a
// config without vision_config is InvalidArgument ("text-only").
Result<std::unique_ptr<VisionTower>> LoadVisionTower(std::shared_ptr<const io::Checkpoint> checkpoint,
                                                     const io::ModelConfig& cfg);
// Opens DIR (config.json + shards) and loads its tower.
Result<std::unique_ptr<VisionTower>> LoadVisionTower(const std::string& dir);

}  // namespace k3::model
