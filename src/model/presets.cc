// The generator presets: K3 and Kimi Linear architectures at toy and benchmark widths.
//
// Every preset follows the real layer-pattern rule (spec §1.3 / §7): the MLA ("full attention") layers
// are every 4th layer counted from 1 plus the last layer, all other layers are KDA; layer 0 has the dense
// MLP and the rest are MoE. The vocabulary is BPE ranks + 256 special ids, with [BOS], <|end_of_msg|> and
// [PAD] at K3's offsets from the first special id (spec §4.1).
#include "src/model/presets.h"

#include <fmt/format.h>

namespace k3::model {
namespace {

constexpr int64_t kNumSpecialTokens = 256;
constexpr int64_t kMediaPadOffset = 21;  // <|media_pad|> = first special id + 21 (163605 in K3)

// kda_layers / full_attn_layers (1-based) for `num_layers` layers.
void SetLayerPattern(io::ModelConfig& cfg) {
  cfg.kda_layers.clear();
  cfg.full_attn_layers.clear();
  for (int64_t layer = 1; layer <= cfg.num_layers; ++layer) {
    if (layer % 4 == 0 || layer == cfg.num_layers) {
      cfg.full_attn_layers.push_back(layer);
    } else {
      cfg.kda_layers.push_back(layer);
    }
  }
}

// Vocabulary of `num_ranks` BPE ranks followed by the 256 special ids.
void SetVocabulary(io::ModelConfig& cfg, int64_t num_ranks) {
  cfg.vocab_size = num_ranks + kNumSpecialTokens;
  cfg.bos_token_id = num_ranks;                          // [BOS]
  cfg.eos_token_id = num_ranks + 2;                      // <|end_of_msg|>
  cfg.pad_token_id = num_ranks + kNumSpecialTokens - 1;  // [PAD]
}

// A vision tower with K3's architecture switches (vision.md §1, §3), projecting to the text width; the
// RMSNorm eps is float32's epsilon (docs/formats.md "Vision tower").
io::VisionConfig PresetVisionConfig(const io::ModelConfig& text, int64_t hidden, int64_t layers,
                                    int64_t heads, int64_t qkv_hidden, int64_t mlp, int64_t grid_height,
                                    int64_t grid_width) {
  io::VisionConfig v;
  v.patch_size = 14;
  v.hidden_size = hidden;
  v.num_layers = layers;
  v.num_heads = heads;
  v.qkv_hidden_size = qkv_hidden;
  v.intermediate_size = mlp;
  v.pos_emb_height = grid_height;
  v.pos_emb_width = grid_width;
  v.pos_emb_time = 4;
  v.merge_kernel_height = 2;
  v.merge_kernel_width = 2;
  v.text_hidden_size = text.hidden_size;
  v.rms_norm_eps = io::kVisionDefaultRmsNormEps;
  v.projector_ln_eps = 1e-5f;
  v.media_placeholder_token_id = text.bos_token_id + kMediaPadOffset;
  return v;
}

io::ModelConfig K3Base() {
  io::ModelConfig cfg;
  SetKimiK3Architecture(cfg);
  cfg.rms_norm_eps = 1e-5f;
  cfg.situ_beta = 4.0f;
  cfg.situ_linear_beta = 25.0f;
  cfg.tie_word_embeddings = false;
  cfg.first_k_dense_replace = 1;
  cfg.moe_layer_freq = 1;
  cfg.moe_renormalize = true;
  cfg.routed_scaling_factor = 1.0f;
  cfg.mxfp4_group_size = 32;
  cfg.short_conv_kernel_size = 4;
  return cfg;
}

// Every K3 feature at toy width (and a tiny vision tower): 10 layers (MLA at 0-based 3, 7, 9), AttnRes blocks
// of 3 layers (blocks freeze at layers 0, 3, 6, 9), latent MoE 128 -> 64 with 8 MXFP4 experts, top-2.
GeneratorPreset TinyK3() {
  io::ModelConfig cfg = K3Base();
  cfg.hidden_size = 128;
  cfg.num_layers = 10;
  SetVocabulary(cfg, 768);
  cfg.intermediate_size = 256;
  cfg.num_experts = 8;
  cfg.num_experts_per_token = 2;
  cfg.moe_intermediate_size = 64;
  cfg.routed_expert_hidden_size = 64;
  cfg.num_shared_experts = 2;
  cfg.mla_num_heads = 4;
  cfg.q_lora_rank = 64;
  cfg.kv_lora_rank = 32;
  cfg.qk_nope_head_dim = 32;
  cfg.qk_rope_head_dim = 16;
  cfg.v_head_dim = 32;
  cfg.kda_num_heads = 4;
  cfg.kda_head_dim = 32;
  cfg.attn_res_block_size = 3;
  cfg.max_position_embeddings = 8192;
  SetLayerPattern(cfg);
  // Tiny tower: 2 blocks of width 64, 4 heads of 24 (qkv 96 != hidden, as K3's 1536 != 1024), MLP 128,
  // a 10 x 16 position grid (not square, so rows and columns cannot be confused).
  cfg.vision = PresetVisionConfig(cfg, 64, 2, 4, 96, 128, 10, 16);
  return GeneratorPreset{"tiny-k3", cfg, 1u << 20};
}

// The Kimi Linear variant at toy width: 6 layers (MLA at 0-based 3, 5), ordinary residual stream, SiLU,
// full-width bf16 experts, low-rank KDA output gate, softplus decay gate, MLA with a single q_proj and
// no output gate.
GeneratorPreset TinyKimiLinear() {
  io::ModelConfig cfg;
  SetKimiLinearArchitecture(cfg);
  cfg.hidden_size = 128;
  cfg.num_layers = 6;
  SetVocabulary(cfg, 768);
  cfg.rms_norm_eps = 1e-5f;
  cfg.tie_word_embeddings = false;
  cfg.intermediate_size = 256;
  cfg.first_k_dense_replace = 1;
  cfg.moe_layer_freq = 1;
  cfg.num_experts = 8;
  cfg.num_experts_per_token = 2;
  cfg.moe_intermediate_size = 64;
  cfg.num_shared_experts = 1;
  cfg.moe_renormalize = true;
  cfg.routed_scaling_factor = 2.446f;
  cfg.mla_num_heads = 4;
  cfg.kv_lora_rank = 32;
  cfg.qk_nope_head_dim = 32;
  cfg.qk_rope_head_dim = 16;
  cfg.v_head_dim = 32;
  cfg.kda_num_heads = 4;
  cfg.kda_head_dim = 32;
  cfg.short_conv_kernel_size = 4;
  cfg.max_position_embeddings = 8192;
  SetLayerPattern(cfg);
  return GeneratorPreset{"tiny-kimi-linear", cfg, 1u << 20};
}

// The K3 architecture at benchmark size (about 2.3 GB on disk): hidden 2048, 12 layers (MLA at 0-based
// 3, 7, 11), 64 MXFP4 experts of 1024 x 1024 in a 1024-wide latent space, top-8, AttnRes blocks of 4.
GeneratorPreset MiniK3() {
  io::ModelConfig cfg = K3Base();
  cfg.hidden_size = 2048;
  cfg.num_layers = 12;
  SetVocabulary(cfg, 32512);
  cfg.intermediate_size = 5632;
  cfg.num_experts = 64;
  cfg.num_experts_per_token = 8;
  cfg.moe_intermediate_size = 1024;
  cfg.routed_expert_hidden_size = 1024;
  cfg.num_shared_experts = 2;
  cfg.mla_num_heads = 16;
  cfg.q_lora_rank = 512;
  cfg.kv_lora_rank = 256;
  cfg.qk_nope_head_dim = 128;
  cfg.qk_rope_head_dim = 64;
  cfg.v_head_dim = 128;
  cfg.kda_num_heads = 16;
  cfg.kda_head_dim = 128;
  cfg.attn_res_block_size = 4;
  cfg.max_position_embeddings = 131072;
  SetLayerPattern(cfg);
  // K3's tower at its real widths (vision.md §1): 27 blocks of 1024, 12 heads of 128, MLP 4096, 64 x 64.
  cfg.vision = PresetVisionConfig(cfg, 1024, 27, 12, 1536, 4096, 64, 64);
  return GeneratorPreset{"mini-k3", cfg, 512u << 20};
}

}  // namespace

void SetKimiK3Architecture(io::ModelConfig& cfg) {
  cfg.family = io::ModelFamily::kKimiK3;
  cfg.model_type = "kimi_k3";
  cfg.tensor_prefix = "language_model.";
  cfg.activation = io::Activation::kSitu;
  cfg.latent_moe_use_norm = true;
  cfg.experts_mxfp4 = true;
  cfg.mla_use_output_gate = true;
  cfg.kda_full_rank_gate = true;
  cfg.kda_has_gate_lower_bound = true;
  cfg.kda_gate_lower_bound = -5.0f;
}

void SetKimiLinearArchitecture(io::ModelConfig& cfg) {
  cfg.family = io::ModelFamily::kKimiLinear;
  cfg.model_type = "kimi_linear";
  cfg.tensor_prefix = "";
  cfg.activation = io::Activation::kSilu;
  cfg.routed_expert_hidden_size = 0;
  cfg.latent_moe_use_norm = false;
  cfg.experts_mxfp4 = false;
  cfg.q_lora_rank = 0;
  cfg.mla_use_output_gate = false;
  cfg.kda_full_rank_gate = false;
  cfg.kda_has_gate_lower_bound = false;
  cfg.kda_gate_lower_bound = 0.0f;
  cfg.attn_res_block_size = 0;
}

const std::vector<GeneratorPreset>& GeneratorPresets() {
  static const std::vector<GeneratorPreset> presets = {TinyK3(), TinyKimiLinear(), MiniK3()};
  return presets;
}

Result<GeneratorPreset> FindGeneratorPreset(const std::string& name) {
  std::string known;
  for (const GeneratorPreset& preset : GeneratorPresets()) {
    if (preset.name == name) return preset;
    known += known.empty() ? preset.name : ", " + preset.name;
  }
  return InvalidArgument("unknown model preset '{}' (known presets: {})", name, known);
}

}  // namespace k3::model
