// ParseModelConfig: config.json text -> validated ModelConfig, for both the kimi_k3 layout (text fields
// under "text_config") and the kimi_linear layout (text fields at top level). Spec k3-model.md §1, §7.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/io/json_fields.h"
#include "src/io/model_config.h"

namespace k3::io {
namespace {

using nlohmann::json;

// Bounds that keep every product the engine and planner form (three widths, a layer count times two
// widths) inside int64. Real values: hidden 7168, vocab 163840, 93 layers, 896 experts.
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxPositions = int64_t{1} << 40;
constexpr int64_t kMxfp4GroupSize = 32;

constexpr Presence kRequired = Presence::kRequired;
constexpr Presence kOptional = Presence::kOptional;

// A token id field: an integer, or a list whose first element is used (eos_token_id often is a list).
Status ReadTokenId(const JsonFields& fields, const char* key, int64_t vocab_size, int64_t* out) {
  const json* value = fields.Find({key});
  if (value == nullptr || value->is_null()) return OkStatus();
  const std::string what = fmt::format("a token id in [0, vocab_size={})", vocab_size);
  if (value->is_array()) {
    if (value->empty())
      return fields.Error(key, "is an empty list", "give at least one token id, or remove it");
    const json& first = (*value)[0];
    bool in_range = first.is_number_integer();
    if (in_range && first.is_number_unsigned()) {
      in_range = first.get<uint64_t>() < static_cast<uint64_t>(vocab_size);
    } else if (in_range) {
      in_range = first.get<int64_t>() >= 0 && first.get<int64_t>() < vocab_size;
    }
    if (!in_range) {
      return fields.Error(
          key, fmt::format("[0] must be an integer in [0, {}), found {}", vocab_size, JsonExcerpt(first)),
          fmt::format("write {}", what));
    }
    *out = first.get<int64_t>();
    return OkStatus();
  }
  return fields.Int({key}, kRequired, 0, vocab_size - 1, out, what);
}

Status ReadLinearAttention(const JsonFields& text, ModelConfig* cfg) {
  const json* object = nullptr;
  K3_RETURN_IF_ERROR(text.Object({"linear_attn_config"}, kRequired, &object,
                                 "the KDA settings: num_heads, head_dim, kda_layers, full_attn_layers"));
  const JsonFields kda(*object, text.Path("linear_attn_config."), text.file());
  K3_RETURN_IF_ERROR(
      kda.Int({"num_heads"}, kRequired, 1, kMaxWidth, &cfg->kda_num_heads, "KDA heads, e.g. 96"));
  K3_RETURN_IF_ERROR(
      kda.Int({"head_dim"}, kRequired, 1, kMaxWidth, &cfg->kda_head_dim, "KDA head size, e.g. 128"));
  K3_RETURN_IF_ERROR(kda.Int({"short_conv_kernel_size"}, kOptional, 1, 1024, &cfg->short_conv_kernel_size,
                             "causal conv width, e.g. 4"));
  // Kimi Linear omits use_full_rank_gate and uses the low-rank g_a/g_b gate; K3 sets it to true.
  cfg->kda_full_rank_gate = cfg->family == ModelFamily::kKimiK3;
  K3_RETURN_IF_ERROR(kda.Bool({"use_full_rank_gate"}, kOptional, &cfg->kda_full_rank_gate,
                              "true: one g_proj [P, D]; false: g_a_proj/g_b_proj"));
  cfg->kda_has_gate_lower_bound = kda.Has({"gate_lower_bound"});
  K3_RETURN_IF_ERROR(kda.Float({"gate_lower_bound"}, kOptional, &cfg->kda_gate_lower_bound,
                               "the decay gate's lower bound, e.g. -5.0, or null for none"));
  const std::string layers_what = fmt::format("1-based layer numbers in [1, {}]", cfg->num_layers);
  K3_RETURN_IF_ERROR(
      kda.IntList({"kda_layers"}, kRequired, 1, cfg->num_layers, &cfg->kda_layers, layers_what));
  K3_RETURN_IF_ERROR(
      kda.IntList({"full_attn_layers"}, kRequired, 1, cfg->num_layers, &cfg->full_attn_layers, layers_what));

  // Every layer exactly once across the two lists.
  std::vector<int> seen(static_cast<size_t>(cfg->num_layers) + 1, 0);
  for (const auto* list : {&cfg->kda_layers, &cfg->full_attn_layers}) {
    const char* key = list == &cfg->kda_layers ? "kda_layers" : "full_attn_layers";
    for (int64_t layer : *list) {
      if (seen[layer]++ > 0) {
        return kda.Error(key,
                         fmt::format("names layer {} a second time (it is in kda_layers or full_attn_layers "
                                     "already)",
                                     layer),
                         "list each 1-based layer in exactly one of kda_layers and full_attn_layers");
      }
    }
  }
  for (int64_t layer = 1; layer <= cfg->num_layers; ++layer) {
    if (seen[layer] == 0) {
      return kda.Error(
          "kda_layers",
          fmt::format("and full_attn_layers together miss layer {} of 1..{}", layer, cfg->num_layers),
          "list each 1-based layer in exactly one of kda_layers and full_attn_layers");
    }
  }
  return OkStatus();
}

Status ReadMla(const JsonFields& text, ModelConfig* cfg) {
  K3_RETURN_IF_ERROR(
      text.Int({"num_attention_heads"}, kRequired, 1, kMaxWidth, &cfg->mla_num_heads, "MLA heads, e.g. 96"));
  K3_RETURN_IF_ERROR(text.Int({"q_lora_rank"}, kOptional, 0, kMaxWidth, &cfg->q_lora_rank,
                              "query low-rank width, e.g. 1536, or null for a single q_proj"));
  K3_RETURN_IF_ERROR(text.Int({"kv_lora_rank"}, kRequired, 1, kMaxWidth, &cfg->kv_lora_rank, "e.g. 512"));
  K3_RETURN_IF_ERROR(
      text.Int({"qk_nope_head_dim"}, kRequired, 1, kMaxWidth, &cfg->qk_nope_head_dim, "e.g. 128"));
  K3_RETURN_IF_ERROR(
      text.Int({"qk_rope_head_dim"}, kRequired, 0, kMaxWidth, &cfg->qk_rope_head_dim, "e.g. 64"));
  K3_RETURN_IF_ERROR(text.Int({"v_head_dim"}, kRequired, 1, kMaxWidth, &cfg->v_head_dim, "e.g. 128"));
  bool use_nope = true;
  K3_RETURN_IF_ERROR(text.Bool({"mla_use_nope"}, kOptional, &use_nope, "true: MLA without RoPE"));
  if (!use_nope) {
    return Status(
        StatusCode::kUnimplemented,
        fmt::format("{}: field '{}' is false; k3stack implements MLA without RoPE only (spec §2.4), as "
                    "every Kimi K3 / Kimi Linear checkpoint uses",
                    text.file(), text.Path("mla_use_nope")));
  }
  return text.Bool({"mla_use_output_gate"}, kOptional, &cfg->mla_use_output_gate,
                   "whether MLA has a sigmoid output gate g_proj");
}

Status ReadFfn(const JsonFields& text, ModelConfig* cfg) {
  K3_RETURN_IF_ERROR(text.Int({"intermediate_size"}, kOptional, 0, kMaxWidth, &cfg->intermediate_size,
                              "dense MLP width, e.g. 33792"));
  K3_RETURN_IF_ERROR(text.Int({"first_k_dense_replace"}, kOptional, 0, kMaxLayers,
                              &cfg->first_k_dense_replace, "number of leading dense-MLP layers, e.g. 1"));
  K3_RETURN_IF_ERROR(text.Int({"moe_layer_freq"}, kOptional, 1, kMaxLayers, &cfg->moe_layer_freq,
                              "every n-th layer is MoE, e.g. 1"));
  K3_RETURN_IF_ERROR(text.Int({"num_experts", "n_routed_experts"}, kOptional, 0, kMaxWidth, &cfg->num_experts,
                              "routed experts per MoE layer, e.g. 896; 0 for none"));
  K3_RETURN_IF_ERROR(text.Int({"num_experts_per_token", "num_experts_per_tok"}, kOptional, 0, kMaxWidth,
                              &cfg->num_experts_per_token, "top-k experts per token, e.g. 16"));
  K3_RETURN_IF_ERROR(text.Int({"moe_intermediate_size"}, kOptional, 0, kMaxWidth, &cfg->moe_intermediate_size,
                              "routed expert hidden width, e.g. 3072"));
  K3_RETURN_IF_ERROR(text.Int({"routed_expert_hidden_size"}, kOptional, 0, kMaxWidth,
                              &cfg->routed_expert_hidden_size,
                              "latent MoE width, e.g. 3584, or absent for none"));
  K3_RETURN_IF_ERROR(text.Bool({"latent_moe_use_norm"}, kOptional, &cfg->latent_moe_use_norm,
                               "RMSNorm on the latent routed output"));
  K3_RETURN_IF_ERROR(text.Int({"num_shared_experts", "n_shared_experts"}, kOptional, 0, kMaxWidth,
                              &cfg->num_shared_experts, "shared experts, e.g. 2"));
  K3_RETURN_IF_ERROR(text.Bool({"moe_renormalize", "norm_topk_prob"}, kOptional, &cfg->moe_renormalize,
                               "renormalise the selected expert weights to sum 1"));
  K3_RETURN_IF_ERROR(text.Float({"routed_scaling_factor"}, kOptional, &cfg->routed_scaling_factor,
                                "factor on the routed output, e.g. 1.0"));
  std::string router = "sigmoid";
  K3_RETURN_IF_ERROR(text.String({"moe_router_activation_func"}, kOptional, &router, "\"sigmoid\""));
  if (router != "sigmoid") {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{}: field '{}' is \"{}\"; only the \"sigmoid\" router is supported",
                              text.file(), text.Path("moe_router_activation_func"), router));
  }
  // Grouped top-k restricts experts to the best topk_group of num_expert_group groups: a no-op unless
  // topk_group < num_expert_group, which the engine does not implement.
  int64_t expert_groups = 1, topk_groups = 1;
  K3_RETURN_IF_ERROR(text.Int({"num_expert_group"}, kOptional, 1, kMaxWidth, &expert_groups, "e.g. 1"));
  K3_RETURN_IF_ERROR(text.Int({"topk_group"}, kOptional, 1, kMaxWidth, &topk_groups, "e.g. 1"));
  if (topk_groups < expert_groups) {
    return Status(
        StatusCode::kUnimplemented,
        fmt::format("{}: fields '{}' = {} and '{}' = {} ask for group-restricted routing, which k3stack "
                    "does not implement (K3 and Kimi Linear use one group)",
                    text.file(), text.Path("topk_group"), topk_groups, text.Path("num_expert_group"),
                    expert_groups));
  }
  if (cfg->num_experts > 0) {
    if (cfg->num_experts_per_token < 1 || cfg->num_experts_per_token > cfg->num_experts) {
      return text.Error(text.Has({"num_experts_per_token"}) || !text.Has({"num_experts_per_tok"})
                            ? "num_experts_per_token"
                            : "num_experts_per_tok",
                        fmt::format("must be in [1, num_experts={}], found {}", cfg->num_experts,
                                    cfg->num_experts_per_token),
                        "set the router's top-k, e.g. 16");
    }
    if (cfg->moe_intermediate_size < 1) {
      return text.Error("moe_intermediate_size", "must be positive when num_experts > 0",
                        "set the routed expert hidden width, e.g. 3072");
    }
  }
  if (cfg->latent_moe_use_norm && cfg->routed_expert_hidden_size == 0) {
    return text.Error("latent_moe_use_norm", "is true but routed_expert_hidden_size is absent or 0",
                      "set routed_expert_hidden_size (e.g. 3584) or set latent_moe_use_norm to false");
  }
  if (!(cfg->routed_scaling_factor > 0)) {
    return text.Error("routed_scaling_factor",
                      fmt::format("must be positive, found {}", cfg->routed_scaling_factor), "use e.g. 1.0");
  }
  for (int64_t layer = 0; layer < cfg->num_layers; ++layer) {
    if (cfg->LayerFfn(layer) == FfnKind::kDense && cfg->intermediate_size < 1) {
      return text.Error("intermediate_size", fmt::format("must be positive: layer {} has a dense MLP", layer),
                        "set the dense MLP width, e.g. 33792");
    }
  }
  return OkStatus();
}

// quantization_config (top level, or inside text_config): only compressed-tensors mxfp4-pack-quantized.
Status ReadQuantization(const JsonFields& top, const JsonFields* text, ModelConfig* cfg) {
  const JsonFields* owner = &top;
  const json* quant = nullptr;
  K3_RETURN_IF_ERROR(top.Object({"quantization_config"}, kOptional, &quant, "compressed-tensors settings"));
  if (quant == nullptr && text != nullptr) {
    owner = text;
    K3_RETURN_IF_ERROR(
        text->Object({"quantization_config"}, kOptional, &quant, "compressed-tensors settings"));
  }
  if (quant == nullptr) return OkStatus();
  const JsonFields q(*quant, owner->Path("quantization_config."), top.file());
  std::string method;
  K3_RETURN_IF_ERROR(q.String({"quant_method"}, kRequired, &method, "\"compressed-tensors\""));
  if (method != "compressed-tensors") {
    return Status(
        StatusCode::kUnimplemented,
        fmt::format("{}: field '{}' is \"{}\"; only \"compressed-tensors\" (mxfp4-pack-quantized experts) "
                    "is supported: dequantise the checkpoint to bf16 or use the official MXFP4 one",
                    top.file(), q.Path("quant_method"), method));
  }
  // The format sits at the top of quantization_config or in each config group.
  std::vector<std::pair<std::string, std::string>> formats;  // (path, format)
  const json* groups = nullptr;
  K3_RETURN_IF_ERROR(q.Object({"config_groups"}, kOptional, &groups, "quantization groups"));
  if (const json* format = q.Find({"format"}); format != nullptr && !format->is_null()) {
    std::string value;
    K3_RETURN_IF_ERROR(q.String({"format"}, kRequired, &value, "\"mxfp4-pack-quantized\""));
    formats.emplace_back(q.Path("format"), value);
  }
  if (groups != nullptr) {
    for (const auto& [name, group] : groups->items()) {
      if (!group.is_object()) {
        return q.Error("config_groups." + name, fmt::format("must be an object, found {}", JsonKind(group)),
                       "write each quantization group as an object");
      }
      const JsonFields group_fields(group, q.Path("config_groups." + name + "."), top.file());
      std::string value;
      K3_RETURN_IF_ERROR(group_fields.String({"format"}, kOptional, &value, "\"mxfp4-pack-quantized\""));
      if (!value.empty()) formats.emplace_back(group_fields.Path("format"), value);
      const json* weights = nullptr;
      K3_RETURN_IF_ERROR(
          group_fields.Object({"weights"}, kOptional, &weights, "the weight quantization scheme"));
      if (weights != nullptr) {
        const JsonFields w(*weights, group_fields.Path("weights."), top.file());
        int64_t group_size = kMxfp4GroupSize;
        K3_RETURN_IF_ERROR(w.Int({"group_size"}, kOptional, 1, kMaxWidth, &group_size, "32 for MXFP4"));
        if (group_size != kMxfp4GroupSize) {
          return Status(StatusCode::kUnimplemented,
                        fmt::format("{}: field '{}' is {}; MXFP4 uses groups of {}", top.file(),
                                    w.Path("group_size"), group_size, kMxfp4GroupSize));
        }
      }
    }
  }
  if (formats.empty()) {
    return q.Error("format", "is missing (also in every config_groups entry)",
                   "set \"format\": \"mxfp4-pack-quantized\"");
  }
  for (const auto& [path, format] : formats) {
    if (format != "mxfp4-pack-quantized") {
      return Status(StatusCode::kUnimplemented,
                    fmt::format("{}: field '{}' is \"{}\"; only \"mxfp4-pack-quantized\" is supported",
                                top.file(), path, format));
    }
  }
  cfg->experts_mxfp4 = true;
  cfg->mxfp4_group_size = kMxfp4GroupSize;
  if (cfg->num_experts == 0) {
    return q.Error("format", "is mxfp4-pack-quantized but the model has no routed experts (num_experts is 0)",
                   "remove quantization_config or set num_experts");
  }
  const int64_t group = cfg->mxfp4_group_size;
  if (cfg->expert_io_dim() % group != 0 || cfg->moe_intermediate_size % group != 0) {
    return q.Error(
        "format",
        fmt::format("needs expert input widths divisible by {}, found {} = {} and "
                    "moe_intermediate_size = {}",
                    group, cfg->routed_expert_hidden_size > 0 ? "routed_expert_hidden_size" : "hidden_size",
                    cfg->expert_io_dim(), cfg->moe_intermediate_size),
        fmt::format("use widths that are multiples of {} or a bf16 checkpoint", group));
  }
  return OkStatus();
}

Status ReadTextFields(const JsonFields& text, ModelConfig* cfg) {
  K3_RETURN_IF_ERROR(
      text.Int({"hidden_size"}, kRequired, 1, kMaxWidth, &cfg->hidden_size, "residual width D, e.g. 7168"));
  K3_RETURN_IF_ERROR(text.Int({"num_hidden_layers", "num_layers"}, kRequired, 1, kMaxLayers, &cfg->num_layers,
                              "decoder layers, e.g. 93"));
  K3_RETURN_IF_ERROR(text.Int({"vocab_size"}, kRequired, 1, kMaxVocab, &cfg->vocab_size, "e.g. 163840"));
  K3_RETURN_IF_ERROR(text.Float({"rms_norm_eps"}, kOptional, &cfg->rms_norm_eps, "e.g. 1e-5"));
  if (!(cfg->rms_norm_eps > 0)) {
    return text.Error("rms_norm_eps", fmt::format("must be positive, found {}", cfg->rms_norm_eps),
                      "use e.g. 1e-5");
  }
  std::string act;
  K3_RETURN_IF_ERROR(text.String({"hidden_act"}, kRequired, &act, "\"situ\" or \"silu\""));
  if (act == "situ") {
    cfg->activation = Activation::kSitu;
  } else if (act == "silu") {
    cfg->activation = Activation::kSilu;
  } else {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{}: field '{}' is \"{}\"; supported activations are \"situ\" and \"silu\"",
                              text.file(), text.Path("hidden_act"), act));
  }
  for (auto [key, value] : {std::pair{"activation_situ_beta", &cfg->situ_beta},
                            std::pair{"activation_situ_linear_beta", &cfg->situ_linear_beta}}) {
    K3_RETURN_IF_ERROR(text.Float({key}, kOptional, value, "a positive SiTU beta, e.g. 4.0 / 25.0"));
    if (!(*value > 0)) {
      return text.Error(key, fmt::format("must be positive, found {}", *value),
                        "use e.g. 4.0 (gate) / 25.0 (up)");
    }
  }
  K3_RETURN_IF_ERROR(text.Int({"attn_res_block_size"}, kOptional, 0, kMaxLayers, &cfg->attn_res_block_size,
                              "layers per AttnRes block, e.g. 12; 0 or absent for none"));
  K3_RETURN_IF_ERROR(text.Int({"max_position_embeddings"}, kOptional, 0, kMaxPositions,
                              &cfg->max_position_embeddings, "context limit, e.g. 1048576"));
  K3_RETURN_IF_ERROR(ReadLinearAttention(text, cfg));
  K3_RETURN_IF_ERROR(ReadMla(text, cfg));
  return ReadFfn(text, cfg);
}

}  // namespace

Result<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& path_for_errors) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    return InvalidArgument(
        "{}: not valid JSON ({}); fix: repair the file (a checkpoint's config.json is one JSON "
        "object)",
        path_for_errors, e.what());
  }
  if (!root.is_object()) {
    return InvalidArgument("{}: must be a JSON object, found {}; fix: use the checkpoint's config.json",
                           path_for_errors, JsonKind(root));
  }
  const JsonFields top(root, "", path_for_errors);
  ModelConfig cfg;
  K3_RETURN_IF_ERROR(
      top.String({"model_type"}, kRequired, &cfg.model_type, "\"kimi_k3\" or \"kimi_linear\""));
  const json* text_object = &root;
  std::string text_prefix;
  if (cfg.model_type == "kimi_k3") {
    cfg.family = ModelFamily::kKimiK3;
    cfg.tensor_prefix = "language_model.";
    K3_RETURN_IF_ERROR(top.Object({"text_config"}, kRequired, &text_object, "the language model's settings"));
    text_prefix = "text_config.";
  } else if (cfg.model_type == "kimi_linear") {
    cfg.family = ModelFamily::kKimiLinear;
    cfg.tensor_prefix = "";
  } else {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{}: field 'model_type' is \"{}\"; supported are \"kimi_k3\" (Kimi K3) and "
                              "\"kimi_linear\" (Kimi Linear)",
                              path_for_errors, cfg.model_type));
  }
  const JsonFields text(*text_object, text_prefix, path_for_errors);
  K3_RETURN_IF_ERROR(ReadTextFields(text, &cfg));
  K3_RETURN_IF_ERROR(ReadQuantization(top, text_object == &root ? nullptr : &text, &cfg));

  // Top-level facts that kimi_k3 may repeat inside text_config: the top level wins.
  const std::vector<const JsonFields*> scopes = text_object == &root
                                                    ? std::vector<const JsonFields*>{&top}
                                                    : std::vector<const JsonFields*>{&top, &text};
  for (auto [key, out] :
       {std::pair{"bos_token_id", &cfg.bos_token_id}, std::pair{"eos_token_id", &cfg.eos_token_id},
        std::pair{"pad_token_id", &cfg.pad_token_id}}) {
    for (const JsonFields* scope : scopes) {
      if (scope->Has({key})) {
        K3_RETURN_IF_ERROR(ReadTokenId(*scope, key, cfg.vocab_size, out));
        break;
      }
    }
  }
  for (const JsonFields* scope : scopes) {
    if (scope->Has({"tie_word_embeddings"})) {
      K3_RETURN_IF_ERROR(scope->Bool({"tie_word_embeddings"}, kRequired, &cfg.tie_word_embeddings,
                                     "whether lm_head shares embed_tokens"));
      break;
    }
  }
  if (top.Has({"vision_config"})) {
    if (cfg.family != ModelFamily::kKimiK3) {
      return Status(
          StatusCode::kUnimplemented,
          fmt::format("{}: field 'vision_config' is present in a \"{}\" config; k3stack implements the "
                      "vision tower of \"kimi_k3\" checkpoints only",
                      path_for_errors, cfg.model_type));
    }
    VisionConfig vision;
    K3_RETURN_IF_ERROR(ParseVisionConfig(top, cfg.hidden_size, cfg.vocab_size, &vision));
    cfg.vision = vision;
  }
  return cfg;
}

}  // namespace k3::io
