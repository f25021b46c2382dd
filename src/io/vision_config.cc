// ParseVisionConfig / VisionConfigToJson: config.json's "vision_config" <-> VisionConfig (vision_config.h).
#include "src/io/vision_config.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/io/json_fields.h"

namespace k3::io {
namespace {

using nlohmann::json;

constexpr Presence kVisionRequired = Presence::kRequired;
constexpr Presence kVisionOptional = Presence::kOptional;
// Widths stay far inside int64 products (real values: hidden 1024, MLP 4096, 27 layers, 64 x 64 grid).
constexpr int64_t kVisionMaxWidth = int64_t{1} << 16;
constexpr int64_t kVisionMaxLayers = 1024;
constexpr int64_t kVisionMaxGrid = 4096;

Status UnsupportedVisionValue(const JsonFields& fields, const char* key, const std::string& found,
                              const char* supported) {
  return Status(StatusCode::kUnimplemented,
                fmt::format("{}: field '{}' is {}; k3stack implements only {} (the Kimi K3 vision tower)",
                            fields.file(), fields.Path(key), found, supported));
}

// A string field that must hold `expected` when present.
Status ExpectVisionString(const JsonFields& fields, const char* key, const char* expected) {
  std::string value = expected;
  K3_RETURN_IF_ERROR(fields.String({key}, kVisionOptional, &value, fmt::format("\"{}\"", expected)));
  if (value != expected) return UnsupportedVisionValue(fields, key, fmt::format("\"{}\"", value), expected);
  return OkStatus();
}

// A bias switch that must be false when present.
Status ExpectNoVisionBias(const JsonFields& fields, const char* key) {
  bool value = false;
  K3_RETURN_IF_ERROR(fields.Bool({key}, kVisionOptional, &value, "false: the layers have no bias"));
  if (value) return UnsupportedVisionValue(fields, key, "true", "bias-free layers (false)");
  return OkStatus();
}

Status ReadVisionMergeKernel(const JsonFields& v, VisionConfig* cfg) {
  const json* value = v.Find({"merge_kernel_size"});
  if (value == nullptr || value->is_null()) return OkStatus();
  std::vector<int64_t> sizes;
  if (value->is_number_integer()) {
    int64_t k = 0;
    K3_RETURN_IF_ERROR(v.Int({"merge_kernel_size"}, kVisionRequired, 1, 16, &k, "e.g. [2, 2]"));
    sizes = {k, k};
  } else {
    K3_RETURN_IF_ERROR(
        v.IntList({"merge_kernel_size"}, kVisionRequired, 1, 16, &sizes, "[height, width], e.g. [2, 2]"));
    if (sizes.size() != 2) {
      return v.Error("merge_kernel_size", fmt::format("must list 2 sizes, found {}", sizes.size()),
                     "write [height, width], e.g. [2, 2]");
    }
  }
  cfg->merge_kernel_height = sizes[0];
  cfg->merge_kernel_width = sizes[1];
  return OkStatus();
}

// The shortest decimal that reads back to the float.
json VisionFloatValue(float value) { return std::strtod(fmt::format("{}", value).c_str(), nullptr); }

}  // namespace

Status ParseVisionConfig(const JsonFields& top, int64_t text_hidden, int64_t vocab_size, VisionConfig* out) {
  const json* object = nullptr;
  K3_RETURN_IF_ERROR(top.Object({"vision_config"}, kVisionRequired, &object, "the vision tower's settings"));
  const JsonFields v(*object, top.Path("vision_config."), top.file());
  VisionConfig cfg;
  K3_RETURN_IF_ERROR(
      v.Int({"patch_size"}, kVisionOptional, 1, 256, &cfg.patch_size, "pixels per patch side, e.g. 14"));
  K3_RETURN_IF_ERROR(v.Int({"vt_hidden_size"}, kVisionOptional, 1, kVisionMaxWidth, &cfg.hidden_size,
                           "the tower's width, e.g. 1024"));
  K3_RETURN_IF_ERROR(v.Int({"vt_num_hidden_layers"}, kVisionOptional, 1, kVisionMaxLayers, &cfg.num_layers,
                           "tower blocks, e.g. 27"));
  K3_RETURN_IF_ERROR(v.Int({"vt_num_attention_heads"}, kVisionOptional, 1, kVisionMaxWidth, &cfg.num_heads,
                           "attention heads, e.g. 12"));
  K3_RETURN_IF_ERROR(v.Int({"vt_intermediate_size"}, kVisionOptional, 1, kVisionMaxWidth,
                           &cfg.intermediate_size, "the blocks' MLP width, e.g. 4096"));
  // Absent: the class default (1536); null: the vision code falls back to vt_hidden_size.
  if (const json* qkv = v.Find({"qkv_hidden_size"}); qkv != nullptr && qkv->is_null()) {
    cfg.qkv_hidden_size = cfg.hidden_size;
  }
  K3_RETURN_IF_ERROR(v.Int({"qkv_hidden_size"}, kVisionOptional, 1, kVisionMaxWidth, &cfg.qkv_hidden_size,
                           "heads x head size, e.g. 1536"));
  K3_RETURN_IF_ERROR(v.Int({"init_pos_emb_height"}, kVisionOptional, 1, kVisionMaxGrid, &cfg.pos_emb_height,
                           "rows of the learned position grid, e.g. 64"));
  K3_RETURN_IF_ERROR(v.Int({"init_pos_emb_width"}, kVisionOptional, 1, kVisionMaxGrid, &cfg.pos_emb_width,
                           "columns of the learned position grid, e.g. 64"));
  K3_RETURN_IF_ERROR(v.Int({"init_pos_emb_time"}, kVisionOptional, 1, kVisionMaxGrid, &cfg.pos_emb_time,
                           "frames of the video time embedding, e.g. 4"));
  K3_RETURN_IF_ERROR(ReadVisionMergeKernel(v, &cfg));
  K3_RETURN_IF_ERROR(v.Float({"vt_rms_norm_eps"}, kVisionOptional, &cfg.rms_norm_eps,
                             "the tower's RMSNorm epsilon, e.g. 1.1920929e-07 (float32's epsilon)"));
  if (!(cfg.rms_norm_eps > 0)) {
    return v.Error("vt_rms_norm_eps", fmt::format("must be positive, found {}", cfg.rms_norm_eps),
                   "use e.g. 1.1920929e-07 or remove it");
  }
  K3_RETURN_IF_ERROR(v.Float({"projector_ln_eps"}, kVisionOptional, &cfg.projector_ln_eps,
                             "the projector's RMSNorm epsilon, e.g. 1e-5"));
  if (!(cfg.projector_ln_eps > 0)) {
    return v.Error("projector_ln_eps", fmt::format("must be positive, found {}", cfg.projector_ln_eps),
                   "use e.g. 1e-5");
  }

  // Architecture switches: only K3's values are implemented.
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "pos_emb_type", "divided_fixed"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "pos_emb_interpolation_mode", "bilinear"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "merge_type", "sd2_tpool"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "mm_projector_type", "patchmergerv2"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "projector_hidden_act", "gelu"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "norm_type", "rmsnorm"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "mlp_type", "mlp2"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "activation_func", "gelu_pytorch_tanh"));
  K3_RETURN_IF_ERROR(ExpectVisionString(v, "video_attn_type", "spatial_temporal"));
  for (const char* key : {"attn_bias", "linear_bias", "patch_embed_proj_bias"}) {
    K3_RETURN_IF_ERROR(ExpectNoVisionBias(v, key));
  }

  if (cfg.qkv_hidden_size % cfg.num_heads != 0 || cfg.head_dim() % 4 != 0) {
    return v.Error("qkv_hidden_size",
                   fmt::format("= {} must be vt_num_attention_heads ({}) times a head size divisible by 4 "
                               "(2-D RoPE rotates pairs for rows and columns)",
                               cfg.qkv_hidden_size, cfg.num_heads),
                   "use e.g. 1536 with 12 heads");
  }
  cfg.text_hidden_size = text_hidden;

  cfg.media_placeholder_token_id = -1;
  if (top.Has({"media_placeholder_token_id"})) {
    K3_RETURN_IF_ERROR(top.Int({"media_placeholder_token_id"}, kVisionRequired, 0, vocab_size - 1,
                               &cfg.media_placeholder_token_id,
                               fmt::format("the <|media_pad|> token id in [0, vocab_size={})", vocab_size)));
  }
  *out = cfg;
  return OkStatus();
}

json VisionConfigToJson(const VisionConfig& cfg) {
  return json{
      {"model_type", "kimi_k3_vision"},
      {"patch_size", cfg.patch_size},
      {"init_pos_emb_height", cfg.pos_emb_height},
      {"init_pos_emb_width", cfg.pos_emb_width},
      {"init_pos_emb_time", cfg.pos_emb_time},
      {"pos_emb_type", "divided_fixed"},
      {"pos_emb_interpolation_mode", "bilinear"},
      {"vt_num_attention_heads", cfg.num_heads},
      {"vt_num_hidden_layers", cfg.num_layers},
      {"vt_hidden_size", cfg.hidden_size},
      {"vt_intermediate_size", cfg.intermediate_size},
      {"qkv_hidden_size", cfg.qkv_hidden_size},
      {"merge_kernel_size", {cfg.merge_kernel_height, cfg.merge_kernel_width}},
      {"video_attn_type", "spatial_temporal"},
      {"merge_type", "sd2_tpool"},
      {"mm_projector_type", "patchmergerv2"},
      {"mm_hidden_size", cfg.hidden_size},
      {"projector_hidden_act", "gelu"},
      {"projector_ln_eps", VisionFloatValue(cfg.projector_ln_eps)},
      {"norm_type", "rmsnorm"},
      {"attn_bias", false},
      {"patch_embed_proj_bias", false},
      {"mlp_type", "mlp2"},
      {"linear_bias", false},
      {"activation_func", "gelu_pytorch_tanh"},
      {"text_hidden_size", cfg.text_hidden_size},
      {"vt_rms_norm_eps", VisionFloatValue(cfg.rms_norm_eps)},
  };
}

}  // namespace k3::io
