// Test helpers: tiny configs and random in-memory tensors (see random_model.h).
#include "src/model/testing/random_model.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "src/base/bf16.h"
#include "src/model/presets.h"
#include "src/model/tensors.h"

namespace k3::model::testing {

io::ModelConfig TinyK3Config() {
  io::ModelConfig c;
  SetKimiK3Architecture(c);
  c.hidden_size = 64;
  c.num_layers = 6;
  c.vocab_size = 128;
  c.intermediate_size = 96;
  c.first_k_dense_replace = 1;
  c.num_experts = 8;
  c.num_experts_per_token = 2;
  c.moe_intermediate_size = 32;
  c.routed_expert_hidden_size = 32;
  c.num_shared_experts = 1;
  c.routed_scaling_factor = 1.0f;
  c.mla_num_heads = 4;
  c.q_lora_rank = 32;
  c.kv_lora_rank = 32;
  c.qk_nope_head_dim = 16;
  c.qk_rope_head_dim = 8;
  c.v_head_dim = 16;
  c.kda_num_heads = 4;
  c.kda_head_dim = 16;
  c.short_conv_kernel_size = 4;
  c.kda_layers = {1, 2, 4, 5};
  c.full_attn_layers = {3, 6};
  c.attn_res_block_size = 2;
  c.max_position_embeddings = 4096;
  return c;
}

io::ModelConfig TinyKimiLinearConfig() {
  io::ModelConfig c = TinyK3Config();
  SetKimiLinearArchitecture(c);
  c.moe_intermediate_size = 24;
  c.routed_scaling_factor = 2.5f;
  return c;
}

const io::TensorView* RandomTensors::Find(const std::string& name) const {
  auto it = views.find(name);
  return it == views.end() ? nullptr : &it->second;
}

std::shared_ptr<RandomTensors> MakeRandomTensors(const io::ModelConfig& cfg, uint32_t seed) {
  auto out = std::make_shared<RandomTensors>();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  out->bytes.reserve(specs.size());
  for (const TensorSpec& spec : specs) {
    size_t numel = 1;
    for (int64_t d : spec.shape) numel *= static_cast<size_t>(d);
    std::vector<float> values(numel);
    switch (spec.init) {
      case InitKind::kLinear:
        for (float& v : values) v = normal(rng) / std::sqrt(static_cast<float>(spec.fan_in));
        break;
      case InitKind::kEmbedding:
        for (float& v : values) v = normal(rng);
        break;
      case InitKind::kNormWeight:
        for (float& v : values) v = 1.0f + 0.1f * normal(rng);
        break;
      case InitKind::kConv:
        for (float& v : values) v = normal(rng) / std::sqrt(static_cast<float>(cfg.short_conv_kernel_size));
        break;
      case InitKind::kALog:
        for (float& v : values) v = std::log(1.0f + 15.0f * unit(rng));
        break;
      case InitKind::kDtBias:
      case InitKind::kRouterBias:
        for (float& v : values) v = 0.1f * normal(rng);
        break;
      case InitKind::kMxfp4Packed:
        for (float& v : values) v = static_cast<float>(rng() & 0xff);
        break;
      case InitKind::kMxfp4Scale: {
        // E2M1 magnitudes average ~2.5: scale 2^-(1 + log2(sqrt(fan_in))) gives std ~ 1/sqrt(fan_in).
        const int exponent = 127 - 1 - static_cast<int>(std::lround(0.5 * std::log2(double(spec.fan_in))));
        for (float& v : values) v = static_cast<float>(exponent - static_cast<int>(rng() % 2));
        break;
      }
      case InitKind::kSentinel:
        break;
    }
    std::vector<uint8_t> bytes(numel * io::DTypeSize(spec.dtype));
    for (size_t i = 0; i < numel; ++i) {
      if (spec.dtype == io::DType::kBF16) {
        const bf16 b = FloatToBf16(values[i]);
        std::memcpy(bytes.data() + 2 * i, &b, 2);
      } else if (spec.dtype == io::DType::kF32) {
        std::memcpy(bytes.data() + 4 * i, &values[i], 4);
      } else {
        bytes[i] = static_cast<uint8_t>(values[i]);
      }
    }
    out->bytes.push_back(std::move(bytes));
    io::TensorView view;
    view.name = spec.name;
    view.dtype = spec.dtype;
    view.shape = spec.shape;
    view.data = out->bytes.back().data();
    view.nbytes = out->bytes.back().size();
    out->views[spec.name] = view;
  }
  return out;
}

Result<std::unique_ptr<Model>> MakeRandomModel(const io::ModelConfig& cfg, uint32_t seed, ThreadPool* pool) {
  std::shared_ptr<RandomTensors> tensors = MakeRandomTensors(cfg, seed);
  const RandomTensors* raw = tensors.get();
  return Model::FromTensors(
      cfg, [raw](const std::string& name) { return raw->Find(name); }, tensors, pool);
}

Status WriteRandomCheckpoint(const io::ModelConfig& cfg, uint32_t seed, const std::string& dir,
                             const std::string& skip_tensor) {
  std::shared_ptr<RandomTensors> tensors = MakeRandomTensors(cfg, seed);
  std::vector<io::TensorToWrite> to_write;
  for (const auto& [name, view] : tensors->views) {
    if (name == skip_tensor) continue;
    to_write.push_back(io::TensorToWrite{name, view.dtype, view.shape,
                                         std::vector<uint8_t>(view.data, view.data + view.nbytes)});
  }
  K3_RETURN_IF_ERROR(io::WriteSafetensors(dir + "/model.safetensors", to_write));
  const std::string json = io::ModelConfigToJson(cfg).dump(2);
  std::FILE* f = std::fopen((dir + "/config.json").c_str(), "wb");
  if (f == nullptr) return IoError("{}/config.json: cannot create", dir);
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (std::fclose(f) != 0 || !ok) return IoError("{}/config.json: write failed", dir);
  return OkStatus();
}

double MaxRowRelativeError(const float* got, const float* want, int64_t rows, int64_t width) {
  double worst = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double diff = 0.0, norm = 0.0;
    for (int64_t i = 0; i < width; ++i) {
      const double g = got[r * width + i], w = want[r * width + i];
      diff += (g - w) * (g - w);
      norm += w * w;
    }
    worst = std::max(worst, std::sqrt(diff / std::max(norm, 1e-30)));
  }
  return worst;
}

}  // namespace k3::model::testing
