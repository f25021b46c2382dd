// ModelConfig: the architecture facts the engine, the generator, the reference and the planner need,
// read from a checkpoint's config.json (spec k3-model.md §1 and §7).
//
// Two layouts are accepted:
//  - kimi_k3: top-level {"model_type": "kimi_k3", "text_config": {...}, "quantization_config": {...}};
//    text tensors carry the prefix "language_model.".
//  - kimi_linear: the text fields at top level, no prefix.
// Anything missing, mistyped or inconsistent (e.g. kda_layers and full_attn_layers not covering every
// layer exactly once) is an InvalidArgument naming config.json, the field (JSON path, e.g.
// text_config.linear_attn_config.kda_layers) and the fix. A well-formed value the engine does not
// implement (another model_type, hidden_act, router, quantization format, RoPE in MLA, grouped routing)
// is Unimplemented. An optional "vision_config" (kimi_k3 only) is read by ParseVisionConfig
// (vision_config.h). Aliases: n_routed_experts, num_experts_per_tok, n_shared_experts, norm_topk_prob.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "src/base/status.h"
#include "src/io/vision_config.h"

namespace k3::io {

enum class ModelFamily { kKimiK3, kKimiLinear, kSentinel };
enum class Activation { kSitu, kSilu, kSentinel };
enum class AttentionKind { kKda, kMla, kSentinel };
enum class FfnKind { kDense, kMoe, kSentinel };

struct ModelConfig {
  ModelFamily family = ModelFamily::kKimiK3;
  std::string model_type;     // "kimi_k3" | "kimi_linear" (top level)
  std::string tensor_prefix;  // "language_model." for kimi_k3, "" for kimi_linear

  // Dimensions. D = hidden_size.
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t vocab_size = 0;
  float rms_norm_eps = 1e-5f;
  Activation activation = Activation::kSitu;
  float situ_beta = 4.0f;          // activation_situ_beta
  float situ_linear_beta = 25.0f;  // activation_situ_linear_beta
  bool tie_word_embeddings = false;

  // Dense MLP (layers < first_k_dense_replace).
  int64_t intermediate_size = 0;
  int64_t first_k_dense_replace = 1;
  int64_t moe_layer_freq = 1;

  // MoE.
  int64_t num_experts = 0;
  int64_t num_experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t routed_expert_hidden_size = 0;  // 0: experts work in the full D space (Kimi Linear)
  bool latent_moe_use_norm = false;
  int64_t num_shared_experts = 0;  // shared MLP width = num_shared_experts * moe_intermediate_size
  bool moe_renormalize = true;
  float routed_scaling_factor = 1.0f;
  bool experts_mxfp4 = false;  // quantization_config: compressed-tensors mxfp4-pack-quantized
  int64_t mxfp4_group_size = 32;

  // Gated MLA.
  int64_t mla_num_heads = 0;  // num_attention_heads
  int64_t q_lora_rank = 0;    // 0: a single q_proj (Kimi Linear)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;  // the unrotated shared-key slot
  int64_t v_head_dim = 0;
  bool mla_use_output_gate = false;

  // KDA (linear_attn_config).
  int64_t kda_num_heads = 0;
  int64_t kda_head_dim = 0;
  int64_t short_conv_kernel_size = 4;
  bool kda_full_rank_gate = true;  // use_full_rank_gate: g_proj [P, D]; else g_a_proj/g_b_proj
  bool kda_has_gate_lower_bound = false;
  float kda_gate_lower_bound = 0.0f;      // e.g. -5.0
  std::vector<int64_t> kda_layers;        // 1-based, as in config.json
  std::vector<int64_t> full_attn_layers;  // 1-based

  // Block Attention Residuals; 0 = ordinary residual stream (Kimi Linear).
  int64_t attn_res_block_size = 0;

  int64_t max_position_embeddings = 0;
  int64_t bos_token_id = -1;
  int64_t eos_token_id = -1;
  int64_t pad_token_id = -1;

  // The vision tower (kimi_k3 with a "vision_config"); absent: a text-only model.
  std::optional<VisionConfig> vision;

  // Derived facts (0-based layer index).
  AttentionKind LayerAttention(int64_t layer) const;
  FfnKind LayerFfn(int64_t layer) const;
  bool has_attn_res() const { return attn_res_block_size > 0; }
  int64_t kda_proj_dim() const { return kda_num_heads * kda_head_dim; }
  int64_t mla_q_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  int64_t shared_expert_intermediate() const { return num_shared_experts * moe_intermediate_size; }
  // Width the routed experts read and write: routed_expert_hidden_size if latent, else hidden_size.
  int64_t expert_io_dim() const {
    return routed_expert_hidden_size > 0 ? routed_expert_hidden_size : hidden_size;
  }
  int64_t num_kda_layers() const;
  int64_t num_mla_layers() const;

  bool operator==(const ModelConfig&) const = default;
};

// Parses config.json text (path is only used in messages).
Result<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& path_for_errors);
// Reads DIR/config.json.
Result<ModelConfig> LoadModelConfig(const std::string& dir);
// Serialises in the HF layout of cfg.family (what gen-model writes; ParseModelConfig reads it back equal).
nlohmann::json ModelConfigToJson(const ModelConfig& cfg);

}  // namespace k3::io
