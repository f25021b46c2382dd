// VisionConfig: the MoonViT vision tower, patch merger and projector of a Kimi K3 checkpoint, read from
// config.json's "vision_config" object (field names as the official KimiK3VisionConfig spells them; spec
// vision.md §1 and §3, values and sources in docs/formats.md "Vision tower") plus the top-level
// media_placeholder_token_id.
//
// Only what the engine implements is accepted: RMSNorm blocks, bias-free layers, GELU-tanh MLP, the
// bilinearly resized "divided_fixed" position grid, the "sd2_tpool" merger and the "patchmergerv2"
// projector. Any other value of those fields is Unimplemented naming config.json, the field and the value.
#pragma once

#include <cstdint>
#include <limits>

#include <nlohmann/json_fwd.hpp>

#include "src/base/status.h"

namespace k3::io {

class JsonFields;

// float32's machine epsilon: what current PyTorch's nn.RMSNorm(dim) (eps=None) adds for bf16 and fp32
// input alike (docs/formats.md "Vision tower" explains the choice).
inline constexpr float kVisionDefaultRmsNormEps = std::numeric_limits<float>::epsilon();

// Defaults are the official KimiK3VisionConfig's (a config.json that leaves a field out gets them there
// too), which are K3's published values.
struct VisionConfig {
  int64_t patch_size = 14;                        // patch_size: a patch is [3, p, p]
  int64_t hidden_size = 1024;                     // vt_hidden_size
  int64_t num_layers = 27;                        // vt_num_hidden_layers
  int64_t num_heads = 12;                         // vt_num_attention_heads
  int64_t intermediate_size = 4096;               // vt_intermediate_size (MLP width)
  int64_t qkv_hidden_size = 1536;                 // qkv_hidden_size (heads * head_dim; null: vt_hidden_size)
  int64_t pos_emb_height = 64;                    // init_pos_emb_height
  int64_t pos_emb_width = 64;                     // init_pos_emb_width
  int64_t pos_emb_time = 4;                       // init_pos_emb_time (video only; kept for the round trip)
  int64_t merge_kernel_height = 2;                // merge_kernel_size[0]
  int64_t merge_kernel_width = 2;                 // merge_kernel_size[1]
  int64_t text_hidden_size = 0;                   // projector output width = text hidden_size
  float rms_norm_eps = kVisionDefaultRmsNormEps;  // vt_rms_norm_eps (k3stack's field; see above)
  float projector_ln_eps = 1e-5f;                 // projector_ln_eps
  int64_t media_placeholder_token_id = -1;        // top level: <|media_pad|>

  int64_t head_dim() const { return qkv_hidden_size / num_heads; }
  int64_t patch_values() const { return 3 * patch_size * patch_size; }  // 588 for patch 14
  int64_t merged_width() const { return hidden_size * merge_kernel_height * merge_kernel_width; }

  bool operator==(const VisionConfig&) const = default;
};

// Reads `top`'s "vision_config" (and media_placeholder_token_id). text_hidden_size is set to
// text_hidden (the official config class overrides any other value the same way).
Status ParseVisionConfig(const JsonFields& top, int64_t text_hidden, int64_t vocab_size, VisionConfig* out);
// The "vision_config" object ParseVisionConfig reads back equal (media_placeholder_token_id is top level).
nlohmann::json VisionConfigToJson(const VisionConfig& cfg);

}  // namespace k3::io
