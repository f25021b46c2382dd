// ListTensors: the text tower's tensors from the config (spec §3.2 for kimi_k3, §7 for kimi_linear).
#include "src/model/tensors.h"

#include <fmt/format.h>

namespace k3::model {
namespace {

using io::DType;

struct Builder {
  const io::ModelConfig& cfg;
  std::vector<TensorSpec> out;

  void Add(std::string name, std::vector<int64_t> shape, DType dtype, InitKind init, int64_t fan_in = 0,
           std::vector<DType> also = {}) {
    std::vector<DType> accepted = {dtype};
    accepted.insert(accepted.end(), also.begin(), also.end());
    out.push_back(TensorSpec{std::move(name), std::move(shape), dtype, std::move(accepted), init, fan_in});
  }
  // A [out, in] bf16 linear layer.
  void Linear(std::string name, int64_t out_dim, int64_t in_dim) {
    Add(std::move(name), {out_dim, in_dim}, DType::kBF16, InitKind::kLinear, in_dim);
  }
  void Norm(std::string name, int64_t n, DType dtype = DType::kBF16) {
    Add(std::move(name), {n}, dtype, InitKind::kNormWeight, 0,
        dtype == DType::kBF16 ? std::vector<DType>{DType::kF32} : std::vector<DType>{DType::kBF16});
  }
  std::string L(int64_t layer, const std::string& suffix) { return LayerTensorName(cfg, layer, suffix); }

  void Mlp(int64_t layer, const std::string& prefix, int64_t width) {
    const int64_t D = cfg.hidden_size;
    Linear(L(layer, prefix + "gate_proj.weight"), width, D);
    Linear(L(layer, prefix + "up_proj.weight"), width, D);
    Linear(L(layer, prefix + "down_proj.weight"), D, width);
  }

  // One expert matrix [out, in]: MXFP4 pair or bf16.
  void ExpertMatrix(const std::string& base, int64_t out_dim, int64_t in_dim) {
    if (cfg.experts_mxfp4) {
      Add(base + ".weight_packed", {out_dim, in_dim / 2}, DType::kU8, InitKind::kMxfp4Packed, in_dim);
      Add(base + ".weight_scale", {out_dim, in_dim / cfg.mxfp4_group_size}, DType::kU8, InitKind::kMxfp4Scale,
          in_dim);
    } else {
      Linear(base + ".weight", out_dim, in_dim);
    }
  }

  void Kda(int64_t layer) {
    const int64_t D = cfg.hidden_size, H = cfg.kda_num_heads, K = cfg.kda_head_dim, P = cfg.kda_proj_dim();
    const int64_t W = cfg.short_conv_kernel_size;
    for (const char* n : {"q", "k", "v"}) Linear(L(layer, fmt::format("self_attn.{}_proj.weight", n)), P, D);
    for (const char* n : {"q", "k", "v"}) {
      Add(L(layer, fmt::format("self_attn.{}_conv1d.weight", n)), {P, 1, W}, DType::kF32, InitKind::kConv, W,
          {DType::kBF16});
    }
    Linear(L(layer, "self_attn.f_a_proj.weight"), K, D);
    Linear(L(layer, "self_attn.f_b_proj.weight"), P, K);
    if (cfg.family == io::ModelFamily::kKimiK3) {
      // Stored padded to a multiple of 128 entries; the first H are used (spec §3.2).
      Add(L(layer, "self_attn.A_log"), {(H + 127) / 128 * 128}, DType::kF32, InitKind::kALog, 0,
          {DType::kBF16});
    } else {
      Add(L(layer, "self_attn.A_log"), {1, 1, H, 1}, DType::kF32, InitKind::kALog, 0, {DType::kBF16});
    }
    Add(L(layer, "self_attn.dt_bias"), {P}, DType::kF32, InitKind::kDtBias, 0, {DType::kBF16});
    Linear(L(layer, "self_attn.b_proj.weight"), H, D);
    if (cfg.kda_full_rank_gate) {
      Linear(L(layer, "self_attn.g_proj.weight"), P, D);
    } else {
      Linear(L(layer, "self_attn.g_a_proj.weight"), K, D);
      Linear(L(layer, "self_attn.g_b_proj.weight"), P, K);
    }
    Norm(L(layer, "self_attn.o_norm.weight"), K, DType::kF32);
    Linear(L(layer, "self_attn.o_proj.weight"), D, P);
  }

  void Mla(int64_t layer) {
    const int64_t D = cfg.hidden_size, H = cfg.mla_num_heads;
    const int64_t q_head = cfg.mla_q_head_dim(), kv = cfg.kv_lora_rank, rope = cfg.qk_rope_head_dim;
    if (cfg.q_lora_rank > 0) {
      Linear(L(layer, "self_attn.q_a_proj.weight"), cfg.q_lora_rank, D);
      Norm(L(layer, "self_attn.q_a_layernorm.weight"), cfg.q_lora_rank);
      Linear(L(layer, "self_attn.q_b_proj.weight"), H * q_head, cfg.q_lora_rank);
    } else {
      Linear(L(layer, "self_attn.q_proj.weight"), H * q_head, D);
    }
    Linear(L(layer, "self_attn.kv_a_proj_with_mqa.weight"), kv + rope, D);
    Norm(L(layer, "self_attn.kv_a_layernorm.weight"), kv);
    Linear(L(layer, "self_attn.kv_b_proj.weight"), H * (cfg.qk_nope_head_dim + cfg.v_head_dim), kv);
    if (cfg.mla_use_output_gate) Linear(L(layer, "self_attn.g_proj.weight"), H * cfg.v_head_dim, D);
    Linear(L(layer, "self_attn.o_proj.weight"), D, H * cfg.v_head_dim);
  }

  void Moe(int64_t layer) {
    const int64_t D = cfg.hidden_size, E = cfg.num_experts, io_dim = cfg.expert_io_dim();
    const std::string m = "block_sparse_moe.";
    Linear(L(layer, m + "gate.weight"), E, D);
    Add(L(layer, m + "gate.e_score_correction_bias"), {E}, DType::kF32, InitKind::kRouterBias, 0,
        {DType::kBF16});
    if (cfg.routed_expert_hidden_size > 0) {
      Linear(L(layer, m + "routed_expert_down_proj.weight"), io_dim, D);
      if (cfg.latent_moe_use_norm) Norm(L(layer, m + "routed_expert_norm.weight"), io_dim);
      Linear(L(layer, m + "routed_expert_up_proj.weight"), D, io_dim);
    }
    if (cfg.num_shared_experts > 0) Mlp(layer, m + "shared_experts.", cfg.shared_expert_intermediate());
    for (int64_t e = 0; e < E; ++e) {
      const std::string base = L(layer, fmt::format("{}experts.{}.", m, e));
      ExpertMatrix(base + "w1", cfg.moe_intermediate_size, io_dim);
      ExpertMatrix(base + "w3", cfg.moe_intermediate_size, io_dim);
      ExpertMatrix(base + "w2", io_dim, cfg.moe_intermediate_size);
    }
  }
};

}  // namespace

std::string LayerTensorName(const io::ModelConfig& cfg, int64_t layer, const std::string& suffix) {
  return fmt::format("{}model.layers.{}.{}", cfg.tensor_prefix, layer, suffix);
}

std::string GlobalTensorName(const io::ModelConfig& cfg, const std::string& suffix) {
  return cfg.tensor_prefix + suffix;
}

std::vector<TensorSpec> ListTensors(const io::ModelConfig& cfg) {
  Builder b{cfg, {}};
  const int64_t D = cfg.hidden_size, V = cfg.vocab_size;
  b.Add(GlobalTensorName(cfg, "model.embed_tokens.weight"), {V, D}, DType::kBF16, InitKind::kEmbedding);
  b.Norm(GlobalTensorName(cfg, "model.norm.weight"), D);
  if (cfg.has_attn_res()) {
    b.Norm(GlobalTensorName(cfg, "model.output_attn_res_norm.weight"), D);
    b.Linear(GlobalTensorName(cfg, "model.output_attn_res_proj.weight"), 1, D);
  }
  if (!cfg.tie_word_embeddings) b.Linear(GlobalTensorName(cfg, "lm_head.weight"), V, D);

  for (int64_t layer = 0; layer < cfg.num_layers; ++layer) {
    b.Norm(b.L(layer, "input_layernorm.weight"), D);
    b.Norm(b.L(layer, "post_attention_layernorm.weight"), D);
    if (cfg.has_attn_res()) {
      b.Norm(b.L(layer, "self_attention_res_norm.weight"), D);
      b.Linear(b.L(layer, "self_attention_res_proj.weight"), 1, D);
      b.Norm(b.L(layer, "mlp_res_norm.weight"), D);
      b.Linear(b.L(layer, "mlp_res_proj.weight"), 1, D);
    }
    if (cfg.LayerAttention(layer) == io::AttentionKind::kKda) {
      b.Kda(layer);
    } else {
      b.Mla(layer);
    }
    if (cfg.LayerFfn(layer) == io::FfnKind::kDense) {
      b.Mlp(layer, "mlp.", cfg.intermediate_size);
    } else {
      b.Moe(layer);
    }
  }
  return std::move(b.out);
}

int64_t RoutedExpertOfTensor(std::string_view name) {
  constexpr std::string_view kMarker = "block_sparse_moe.experts.";
  const size_t at = name.find(kMarker);
  if (at == std::string_view::npos) return -1;
  int64_t expert = 0;
  size_t i = at + kMarker.size();
  const size_t digits_begin = i;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i - digits_begin < 12; ++i) {
    expert = expert * 10 + (name[i] - '0');
  }
  if (i == digits_begin || i >= name.size() || name[i] != '.') return -1;
  return expert;
}

ParameterCount CountParameters(const io::ModelConfig& cfg) {
  ParameterCount count;
  int64_t embedding = 0;
  int64_t one_expert = 3 * cfg.moe_intermediate_size * cfg.expert_io_dim();
  for (const TensorSpec& t : ListTensors(cfg)) {
    if (t.init == InitKind::kMxfp4Scale) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    if (t.init == InitKind::kMxfp4Packed) n *= 2;
    count.total += n;
    if (t.name.find(".experts.") != std::string::npos) {
      count.routed_experts += n;
    } else if (t.init == InitKind::kEmbedding) {
      embedding += n;
    }
  }
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < cfg.num_layers; ++l) moe_layers += cfg.LayerFfn(l) == io::FfnKind::kMoe;
  count.active_per_token =
      count.total - embedding - count.routed_experts + moe_layers * cfg.num_experts_per_token * one_expert;
  return count;
}

}  // namespace k3::model
