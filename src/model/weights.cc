// BindWeights: checks a checkpoint's tensors against ListTensors(cfg) and binds them (spec §3.2, §7).
#include "src/model/weights.h"

#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/model/tensors.h"

namespace k3::model {
namespace {

using io::DType;

std::string ShapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string DTypeList(const std::vector<DType>& dtypes) {
  std::string out;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (i > 0) out += i + 1 == dtypes.size() ? " or " : ", ";
    out += io::DTypeName(dtypes[i]);
  }
  return out;
}

float ElementToFloat(const io::TensorView& view, size_t i) {
  if (view.dtype == DType::kF32) {
    float f;
    std::memcpy(&f, view.data + 4 * i, 4);
    return f;
  }
  bf16 b;
  std::memcpy(&b, view.data + 2 * i, 2);
  return Bf16ToFloat(b);
}

// Resolves names to checked views and converts them into the weight structs.
class Binder {
 public:
  Binder(const io::ModelConfig& cfg, std::map<std::string, const io::TensorView*> views, ModelWeights* out)
      : cfg_(cfg), views_(std::move(views)), out_(out) {}

  const io::TensorView& View(const std::string& name) { return *views_.at(name); }

  // A bf16 matrix used in place (copied only when the file leaves it misaligned for 2-byte reads).
  Bf16Matrix Matrix(const std::string& name) {
    const io::TensorView& v = View(name);
    Bf16Matrix m;
    m.rows = v.shape[0];
    m.cols = v.shape.size() > 1 ? v.shape[1] : 1;
    m.data = reinterpret_cast<const bf16*>(Aligned(v, alignof(bf16)));
    return m;
  }
  std::vector<float> Floats(const std::string& name, size_t count) {
    const io::TensorView& v = View(name);
    std::vector<float> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = ElementToFloat(v, i);
    return out;
  }
  std::vector<bf16> Bf16s(const std::string& name) {
    const io::TensorView& v = View(name);
    std::vector<bf16> out(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = FloatToBf16(ElementToFloat(v, i));
    return out;
  }
  // wn[d] * wp[d] in fp32 (spec §2.6).
  AttnResMixer Mixer(const std::string& norm_name, const std::string& proj_name) {
    std::vector<float> wn = Floats(norm_name, cfg_.hidden_size);
    std::vector<float> wp = Floats(proj_name, cfg_.hidden_size);
    AttnResMixer mixer;
    mixer.query.resize(wn.size());
    for (size_t d = 0; d < wn.size(); ++d) mixer.query[d] = wn[d] * wp[d];
    return mixer;
  }
  ExpertMatrix Expert(const std::string& base) {
    ExpertMatrix m;
    if (cfg_.experts_mxfp4) {
      const io::TensorView& packed = View(base + ".weight_packed");
      m.packed = packed.data;
      m.scales = View(base + ".weight_scale").data;
      m.rows = packed.shape[0];
      m.cols = packed.shape[1] * 2;
    } else {
      Bf16Matrix b = Matrix(base + ".weight");
      m.bf16_data = b.data;
      m.rows = b.rows;
      m.cols = b.cols;
    }
    return m;
  }
  MlpWeights Mlp(int64_t layer, const std::string& prefix) {
    return MlpWeights{Matrix(L(layer, prefix + "gate_proj.weight")),
                      Matrix(L(layer, prefix + "up_proj.weight")),
                      Matrix(L(layer, prefix + "down_proj.weight"))};
  }
  std::string L(int64_t layer, const std::string& suffix) { return LayerTensorName(cfg_, layer, suffix); }

  void Kda(int64_t layer, KdaWeights* w) {
    const int64_t H = cfg_.kda_num_heads, P = cfg_.kda_proj_dim(), Wt = cfg_.short_conv_kernel_size;
    w->q_proj = Matrix(L(layer, "self_attn.q_proj.weight"));
    w->k_proj = Matrix(L(layer, "self_attn.k_proj.weight"));
    w->v_proj = Matrix(L(layer, "self_attn.v_proj.weight"));
    w->q_conv = Floats(L(layer, "self_attn.q_conv1d.weight"), P * Wt);
    w->k_conv = Floats(L(layer, "self_attn.k_conv1d.weight"), P * Wt);
    w->v_conv = Floats(L(layer, "self_attn.v_conv1d.weight"), P * Wt);
    w->f_a_proj = Matrix(L(layer, "self_attn.f_a_proj.weight"));
    w->f_b_proj = Matrix(L(layer, "self_attn.f_b_proj.weight"));
    w->a_exp = Floats(L(layer, "self_attn.A_log"), H);
    for (float& a : w->a_exp) a = std::exp(a);
    w->dt_bias = Floats(L(layer, "self_attn.dt_bias"), P);
    w->b_proj = Matrix(L(layer, "self_attn.b_proj.weight"));
    if (cfg_.kda_full_rank_gate) {
      w->g_proj = Matrix(L(layer, "self_attn.g_proj.weight"));
    } else {
      w->g_a_proj = Matrix(L(layer, "self_attn.g_a_proj.weight"));
      w->g_b_proj = Matrix(L(layer, "self_attn.g_b_proj.weight"));
    }
    w->o_norm = Floats(L(layer, "self_attn.o_norm.weight"), cfg_.kda_head_dim);
    w->o_proj = Matrix(L(layer, "self_attn.o_proj.weight"));
  }

  void Mla(int64_t layer, MlaWeights* w) {
    if (cfg_.q_lora_rank > 0) {
      w->q_a_proj = Matrix(L(layer, "self_attn.q_a_proj.weight"));
      w->q_a_norm = Bf16s(L(layer, "self_attn.q_a_layernorm.weight"));
      w->q_b_proj = Matrix(L(layer, "self_attn.q_b_proj.weight"));
    } else {
      w->q_proj = Matrix(L(layer, "self_attn.q_proj.weight"));
    }
    w->kv_a_proj = Matrix(L(layer, "self_attn.kv_a_proj_with_mqa.weight"));
    w->kv_a_norm = Bf16s(L(layer, "self_attn.kv_a_layernorm.weight"));
    w->kv_b_proj = Matrix(L(layer, "self_attn.kv_b_proj.weight"));
    // Wuk_h = kv_b rows [h*(nope+Vh), h*(nope+Vh)+nope) [nope, R]; store its transpose [R, nope] per head.
    const int64_t H = cfg_.mla_num_heads, nope = cfg_.qk_nope_head_dim, R = cfg_.kv_lora_rank;
    const int64_t per_head = nope + cfg_.v_head_dim;
    w->key_up_transposed.resize(static_cast<size_t>(H * R * nope));
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t n = 0; n < nope; ++n) {
        const bf16* row = w->kv_b_proj.data + (h * per_head + n) * R;
        for (int64_t r = 0; r < R; ++r) w->key_up_transposed[(h * R + r) * nope + n] = row[r];
      }
    }
    if (cfg_.mla_use_output_gate) w->g_proj = Matrix(L(layer, "self_attn.g_proj.weight"));
    w->o_proj = Matrix(L(layer, "self_attn.o_proj.weight"));
  }

  void Moe(int64_t layer, MoeWeights* w) {
    const std::string m = "block_sparse_moe.";
    w->router = Matrix(L(layer, m + "gate.weight"));
    w->correction_bias = Floats(L(layer, m + "gate.e_score_correction_bias"), cfg_.num_experts);
    if (cfg_.routed_expert_hidden_size > 0) {
      w->latent_down = Matrix(L(layer, m + "routed_expert_down_proj.weight"));
      if (cfg_.latent_moe_use_norm) w->latent_norm = Bf16s(L(layer, m + "routed_expert_norm.weight"));
      w->latent_up = Matrix(L(layer, m + "routed_expert_up_proj.weight"));
    }
    w->has_shared = cfg_.num_shared_experts > 0;
    if (w->has_shared) w->shared = Mlp(layer, m + "shared_experts.");
    w->experts.resize(static_cast<size_t>(cfg_.num_experts));
    for (int64_t e = 0; e < cfg_.num_experts; ++e) {
      const std::string base = L(layer, fmt::format("{}experts.{}.", m, e));
      w->experts[e] = ExpertWeights{Expert(base + "w1"), Expert(base + "w3"), Expert(base + "w2")};
    }
  }

 private:
  const uint8_t* Aligned(const io::TensorView& v, size_t alignment) {
    if (reinterpret_cast<uintptr_t>(v.data) % alignment == 0) return v.data;
    out_->owned.emplace_back(v.data, v.data + v.nbytes);
    return out_->owned.back().data();
  }

  const io::ModelConfig& cfg_;
  std::map<std::string, const io::TensorView*> views_;
  ModelWeights* out_;
};

}  // namespace

Result<const io::TensorView*> CheckTensor(const TensorSpec& spec, const TensorLookup& lookup) {
  const io::TensorView* view = lookup(spec.name);
  if (view == nullptr) {
    return NotFound(
        "tensor '{}' is missing from the checkpoint (the config needs it with shape {} and dtype {})",
        spec.name, ShapeText(spec.shape), DTypeList(spec.accepted_dtypes));
  }
  bool dtype_ok = false;
  for (DType d : spec.accepted_dtypes) dtype_ok |= (view->dtype == d);
  if (!dtype_ok) {
    return InvalidArgument("tensor '{}' has dtype {} but the config needs {}", spec.name,
                           io::DTypeName(view->dtype), DTypeList(spec.accepted_dtypes));
  }
  if (view->shape != spec.shape) {
    return InvalidArgument("tensor '{}' has shape {} but the config needs {}", spec.name,
                           ShapeText(view->shape), ShapeText(spec.shape));
  }
  size_t numel = 1;
  for (int64_t d : spec.shape) numel *= static_cast<size_t>(d);
  if (view->nbytes != numel * io::DTypeSize(view->dtype) || (numel > 0 && view->data == nullptr)) {
    return DataLoss("tensor '{}' holds {} bytes but shape {} of {} needs {}", spec.name, view->nbytes,
                    ShapeText(spec.shape), io::DTypeName(view->dtype), numel * io::DTypeSize(view->dtype));
  }
  return view;
}

Result<std::unique_ptr<ModelWeights>> BindWeights(const io::ModelConfig& cfg, const TensorLookup& lookup) {
  std::map<std::string, const io::TensorView*> views;
  for (const TensorSpec& spec : ListTensors(cfg)) {
    K3_ASSIGN_OR_RETURN(const io::TensorView* view, CheckTensor(spec, lookup));
    views[spec.name] = view;
  }
  auto weights = std::make_unique<ModelWeights>();
  Binder b(cfg, std::move(views), weights.get());
  weights->embed = b.Matrix(GlobalTensorName(cfg, "model.embed_tokens.weight"));
  weights->lm_head =
      cfg.tie_word_embeddings ? weights->embed : b.Matrix(GlobalTensorName(cfg, "lm_head.weight"));
  weights->final_norm = b.Bf16s(GlobalTensorName(cfg, "model.norm.weight"));
  if (cfg.has_attn_res()) {
    weights->output_mixer = b.Mixer(GlobalTensorName(cfg, "model.output_attn_res_norm.weight"),
                                    GlobalTensorName(cfg, "model.output_attn_res_proj.weight"));
  }
  int64_t kda_count = 0, mla_count = 0;
  weights->layers.resize(static_cast<size_t>(cfg.num_layers));
  for (int64_t layer = 0; layer < cfg.num_layers; ++layer) {
    LayerWeights& lw = weights->layers[layer];
    lw.attention = cfg.LayerAttention(layer);
    lw.ffn = cfg.LayerFfn(layer);
    lw.input_norm = b.Bf16s(b.L(layer, "input_layernorm.weight"));
    lw.post_attention_norm = b.Bf16s(b.L(layer, "post_attention_layernorm.weight"));
    if (cfg.has_attn_res()) {
      lw.attention_mixer =
          b.Mixer(b.L(layer, "self_attention_res_norm.weight"), b.L(layer, "self_attention_res_proj.weight"));
      lw.ffn_mixer = b.Mixer(b.L(layer, "mlp_res_norm.weight"), b.L(layer, "mlp_res_proj.weight"));
    }
    if (lw.attention == io::AttentionKind::kKda) {
      lw.kda_index = kda_count++;
      b.Kda(layer, &lw.kda);
    } else {
      lw.mla_index = mla_count++;
      b.Mla(layer, &lw.mla);
    }
    if (lw.ffn == io::FfnKind::kDense) {
      lw.mlp = b.Mlp(layer, "mlp.");
    } else {
      b.Moe(layer, &lw.moe);
    }
  }
  return weights;
}

namespace {

void AddMatrix(const Bf16Matrix& m, std::vector<std::span<const uint8_t>>* out) {
  if (m.data == nullptr || m.rows * m.cols == 0) return;
  out->emplace_back(reinterpret_cast<const uint8_t*>(m.data), static_cast<size_t>(m.rows * m.cols) * 2);
}

void AddExpert(const ExpertMatrix& m, std::vector<std::span<const uint8_t>>* out) {
  const size_t values = static_cast<size_t>(m.rows * m.cols);
  if (values == 0) return;
  if (m.bf16_data != nullptr) out->emplace_back(reinterpret_cast<const uint8_t*>(m.bf16_data), values * 2);
  if (m.packed != nullptr) out->emplace_back(m.packed, values / 2);   // two FP4 values a byte
  if (m.scales != nullptr) out->emplace_back(m.scales, values / 32);  // one E8M0 scale per 32 values
}

void AddMlp(const MlpWeights& m, std::vector<std::span<const uint8_t>>* out) {
  AddMatrix(m.gate, out);
  AddMatrix(m.up, out);
  AddMatrix(m.down, out);
}

}  // namespace

std::vector<std::span<const uint8_t>> ViewedBytes(const ModelWeights& w) {
  std::vector<std::span<const uint8_t>> out;
  AddMatrix(w.embed, &out);
  AddMatrix(w.lm_head, &out);
  for (const LayerWeights& layer : w.layers) {
    const KdaWeights& k = layer.kda;
    for (const Bf16Matrix* m : {&k.q_proj, &k.k_proj, &k.v_proj, &k.f_a_proj, &k.f_b_proj, &k.b_proj,
                                &k.g_proj, &k.g_a_proj, &k.g_b_proj, &k.o_proj}) {
      AddMatrix(*m, &out);
    }
    const MlaWeights& a = layer.mla;
    for (const Bf16Matrix* m :
         {&a.q_a_proj, &a.q_b_proj, &a.q_proj, &a.kv_a_proj, &a.kv_b_proj, &a.g_proj, &a.o_proj}) {
      AddMatrix(*m, &out);
    }
    AddMlp(layer.mlp, &out);
    const MoeWeights& moe = layer.moe;
    AddMatrix(moe.router, &out);
    AddMatrix(moe.latent_down, &out);
    AddMatrix(moe.latent_up, &out);
    if (moe.has_shared) AddMlp(moe.shared, &out);
    for (const ExpertWeights& e : moe.experts) {
      AddExpert(e.gate, &out);
      AddExpert(e.up, &out);
      AddExpert(e.down, &out);
    }
  }
  return out;
}

}  // namespace k3::model
