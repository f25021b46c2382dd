// ModelConfigToJson: a ModelConfig as the Hugging Face config.json of its family (what gen-model writes).
// kimi_k3 nests the text fields under "text_config" and puts quantization_config (compressed-tensors,
// mxfp4-pack-quantized, group 32) at top level; kimi_linear writes everything at top level.
// ParseModelConfig reads the result back to an equal ModelConfig.
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "src/io/model_config.h"

namespace k3::io {
namespace {

using nlohmann::json;

// The float as the shortest decimal that reads back to it (2.446f -> 2.446, not 2.4460000991821289).
json FloatValue(float value) { return std::strtod(fmt::format("{}", value).c_str(), nullptr); }

json LinearAttentionJson(const ModelConfig& cfg) {
  return json{
      {"num_heads", cfg.kda_num_heads},
      {"head_dim", cfg.kda_head_dim},
      {"short_conv_kernel_size", cfg.short_conv_kernel_size},
      {"use_full_rank_gate", cfg.kda_full_rank_gate},
      {"gate_lower_bound",
       cfg.kda_has_gate_lower_bound ? FloatValue(cfg.kda_gate_lower_bound) : json(nullptr)},
      {"kda_layers", cfg.kda_layers},
      {"full_attn_layers", cfg.full_attn_layers},
  };
}

json TextJson(const ModelConfig& cfg) {
  return json{
      {"model_type", "kimi_linear"},
      {"hidden_size", cfg.hidden_size},
      {"num_hidden_layers", cfg.num_layers},
      {"vocab_size", cfg.vocab_size},
      {"rms_norm_eps", FloatValue(cfg.rms_norm_eps)},
      {"hidden_act", cfg.activation == Activation::kSitu ? "situ" : "silu"},
      {"activation_situ_beta", FloatValue(cfg.situ_beta)},
      {"activation_situ_linear_beta", FloatValue(cfg.situ_linear_beta)},
      {"tie_word_embeddings", cfg.tie_word_embeddings},
      {"intermediate_size", cfg.intermediate_size},
      {"first_k_dense_replace", cfg.first_k_dense_replace},
      {"moe_layer_freq", cfg.moe_layer_freq},
      {"num_experts", cfg.num_experts},
      {"num_experts_per_token", cfg.num_experts_per_token},
      {"moe_intermediate_size", cfg.moe_intermediate_size},
      {"routed_expert_hidden_size", cfg.routed_expert_hidden_size},
      {"latent_moe_use_norm", cfg.latent_moe_use_norm},
      {"num_shared_experts", cfg.num_shared_experts},
      {"moe_renormalize", cfg.moe_renormalize},
      {"routed_scaling_factor", FloatValue(cfg.routed_scaling_factor)},
      {"moe_router_activation_func", "sigmoid"},
      {"topk_method", "noaux_tc"},
      {"use_grouped_topk", true},
      {"num_expert_group", 1},
      {"topk_group", 1},
      {"num_attention_heads", cfg.mla_num_heads},
      {"num_key_value_heads", cfg.mla_num_heads},
      {"q_lora_rank", cfg.q_lora_rank > 0 ? json(cfg.q_lora_rank) : json(nullptr)},
      {"kv_lora_rank", cfg.kv_lora_rank},
      {"qk_nope_head_dim", cfg.qk_nope_head_dim},
      {"qk_rope_head_dim", cfg.qk_rope_head_dim},
      {"v_head_dim", cfg.v_head_dim},
      {"mla_use_nope", true},
      {"mla_use_output_gate", cfg.mla_use_output_gate},
      {"linear_attn_config", LinearAttentionJson(cfg)},
      {"attn_res_block_size", cfg.attn_res_block_size},
      {"max_position_embeddings", cfg.max_position_embeddings},
      {"num_nextn_predict_layers", 0},
  };
}

// compressed-tensors: routed experts in MXFP4 (W4A16); everything listed in "ignore" stays bf16.
json QuantizationJson(const ModelConfig& cfg) {
  const json weights = {
      {"num_bits", 4},        {"type", "float"},  {"strategy", "group"}, {"group_size", cfg.mxfp4_group_size},
      {"symmetric", true},    {"dynamic", false}, {"actorder", nullptr}, {"block_structure", nullptr},
      {"observer", "minmax"},
  };
  return json{
      {"quant_method", "compressed-tensors"},
      {"format", "mxfp4-pack-quantized"},
      {"quantization_status", "compressed"},
      {"kv_cache_scheme", nullptr},
      {"config_groups",
       {{"group_0",
         {{"format", "mxfp4-pack-quantized"},
          {"targets", {"Linear"}},
          {"weights", weights},
          {"input_activations", nullptr},
          {"output_activations", nullptr}}}}},
      {"ignore",
       {"lm_head", "re:.*self_attn.*", "re:.*mlp\\..*", "re:.*shared_experts.*",
        "re:.*block_sparse_moe\\.gate$", "re:.*routed_expert_(down|up)_proj$", "re:vision_tower.*",
        "re:mm_projector.*"}},
  };
}

void AddTokenIds(const ModelConfig& cfg, json* out) {
  if (cfg.bos_token_id >= 0) (*out)["bos_token_id"] = cfg.bos_token_id;
  if (cfg.eos_token_id >= 0) (*out)["eos_token_id"] = cfg.eos_token_id;
  if (cfg.pad_token_id >= 0) (*out)["pad_token_id"] = cfg.pad_token_id;
}

}  // namespace

json ModelConfigToJson(const ModelConfig& cfg) {
  json text = TextJson(cfg);
  json out;
  if (cfg.family == ModelFamily::kKimiLinear) {
    out = std::move(text);
    out["architectures"] = {"KimiLinearForCausalLM"};
    out["model_type"] = "kimi_linear";
    AddTokenIds(cfg, &out);
  } else {
    if (cfg.eos_token_id >= 0)
      text["eos_token_id"] = cfg.eos_token_id;  // repeated there, as in the real file
    out = json{
        {"architectures", {"KimiK3ForConditionalGeneration"}},
        {"model_type", "kimi_k3"},
        {"tie_word_embeddings", cfg.tie_word_embeddings},
        {"text_config", std::move(text)},
    };
    AddTokenIds(cfg, &out);
  }
  if (cfg.vision.has_value()) {
    out["vision_config"] = VisionConfigToJson(*cfg.vision);
    if (cfg.vision->media_placeholder_token_id >= 0) {
      out["media_placeholder_token_id"] = cfg.vision->media_placeholder_token_id;
    }
  }
  if (cfg.experts_mxfp4) out["quantization_config"] = QuantizationJson(cfg);
  return out;
}

}  // namespace k3::io
