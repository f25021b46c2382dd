// The vision tower in a plan: its parameters (from config.json's vision_config, or K3's published tower
// for the catalog's kimi-k3) and the activation memory of one image at the patch budget.
//
// Parameters, with h = hidden, q = qkv width (heads x head_dim), I = MLP width, p = patch, m = mh x mw
// merge kernel, P = position grid, T = text hidden (every linear bias-free, vision.md §1, §3):
//   tower     = 3 p^2 h (patch embed) + P h (positions) + L (2h + 3qh + qh + 2hI) (norms, wqkv, wo, fc0, fc1)
//               + h (final norm)
//   projector = (m h)^2 + m h T + T                (Linear(mh -> mh), Linear(mh -> T), RMSNorm(T))
// Activations of one image of S = in_patch_limit patches (the largest the processor makes), b bytes a
// value, inference (one block live at a time):
//   hidden states  = 2 S h b        (the residual stream and its normed copy)
//   attention      = 4 S q b        (q, k, v and the attention output)
//   MLP            = 2 S I b        (fc0 output and its GELU)
//   scores (dense) = S^2 b per head (only where attention is not fused; flash / SDPA kernels keep O(S))
//   peak           = hidden states + max(attention, MLP); dense: hidden states + attention + one head's
//                    scores
// Placement assumed by the fit: every GPU (or CPU rank) holds a full copy of the tower (it is small, and
// each rank encodes its own requests' images) plus one largest image's activations (fused attention).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "src/base/status.h"
#include "src/deploy/catalog.h"

namespace k3::deploy {

struct VisionTowerSpec {
  std::string source;  // where the widths come from
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t qkv_hidden = 0;  // heads x head_dim
  int64_t intermediate = 0;
  int64_t patch = 14;
  int64_t merge_h = 2, merge_w = 2;
  int64_t pos_emb_h = 64, pos_emb_w = 64;
  int64_t text_hidden = 7168;
  int64_t dtype_bytes = 2;         // bf16
  int64_t in_patch_limit = 65536;  // the image processor's patch budget
  // The checkpoint's weight_bytes already count the tower (a directory's index / files do; the catalog's
  // kimi-k3 figure is the text checkpoint only).
  bool in_weight_bytes = false;
};

// K3's published tower (vision.md §1; NeMo AutoModel's defaults): hidden 1024, 27 layers, 12 heads of
// 128 (qkv 1536), MLP 4096, patch 14, merge 2 x 2, positions 64 x 64, text hidden 7168, bf16,
// in_patch_limit 65,536.
VisionTowerSpec K3VisionTower();

struct VisionPlan {
  VisionTowerSpec spec;
  int64_t tower_params = 0;
  int64_t projector_params = 0;
  int64_t params() const { return tower_params + projector_params; }
  int64_t weight_bytes() const { return params() * spec.dtype_bytes; }
  int64_t max_patches = 0;  // S
  int64_t hidden_states_bytes = 0;
  int64_t attention_bytes = 0;
  int64_t mlp_bytes = 0;
  int64_t scores_per_head_bytes = 0;  // dense
  int64_t activation_bytes = 0;       // fused attention: what the fit counts
  int64_t activation_dense_bytes = 0;
};

VisionPlan PlanVision(const VisionTowerSpec& spec);

// The tower of a resolved model: K3's published one for the catalog's kimi_k3 models, none for other
// catalog models, a directory's vision_config (none when its config.json has none). `model_arg` is
// --model as given. Errors name config.json and the field.
Result<std::optional<VisionTowerSpec>> VisionTowerFor(const ModelSpec& model, const std::string& model_arg,
                                                      bool from_catalog);

// Parses a vision_config object's widths out of config.json text (text_config.hidden_size or the top
// level's for T); nullopt when there is no vision_config. `preprocessor_json` (may be empty) gives
// in_patch_limit (media_proc_cfg or top level).
Result<std::optional<VisionTowerSpec>> VisionTowerFromConfigText(const std::string& where,
                                                                 const std::string& config_json,
                                                                 const std::string& preprocessor_json);

}  // namespace k3::deploy
