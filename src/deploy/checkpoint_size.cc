// Checkpoint sizing for the planner: config.json + index -> ModelSpec.
#include "src/deploy/checkpoint_size.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "src/base/file.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;

Result<int64_t> PositiveInt(const Json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return InvalidArgument("{}: missing '{}' (needed to size the cache)", where, key);
  if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
    return InvalidArgument("{}: '{}' must be a positive integer", where, key);
  }
  return it->get<int64_t>();
}

int64_t OptionalInt(const Json& object, const char* key, int64_t fallback) {
  auto it = object.find(key);
  return (it != object.end() && it->is_number_integer()) ? it->get<int64_t>() : fallback;
}

}  // namespace

Result<ModelSpec> ModelSpecFromConfigText(const std::string& name, const std::string& config_json,
                                          const std::string& index_json, int64_t weight_bytes_from_files) {
  const std::string where = name + "/config.json";
  Json config = Json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return InvalidArgument("{}: not a JSON object", where);
  ModelSpec m;
  m.id = name;
  m.family = config.value("model_type", std::string());
  const Json* text = &config;
  if (auto it = config.find("text_config"); it != config.end() && it->is_object()) text = &*it;
  if (m.family != "kimi_k3" && m.family != "kimi_linear") {
    return InvalidArgument("{}: model_type '{}' is not kimi_k3 or kimi_linear", where, m.family);
  }
  auto lin = text->find("linear_attn_config");
  if (lin == text->end() || !lin->is_object()) {
    return InvalidArgument("{}: missing object 'linear_attn_config' (KDA heads and layer lists)", where);
  }
  K3_ASSIGN_OR_RETURN(int64_t layers, PositiveInt(*text, "num_hidden_layers", where));
  K3_ASSIGN_OR_RETURN(int64_t kv_lora, PositiveInt(*text, "kv_lora_rank", where));
  K3_ASSIGN_OR_RETURN(int64_t rope_dim, PositiveInt(*text, "qk_rope_head_dim", where));
  K3_ASSIGN_OR_RETURN(m.kda_heads, PositiveInt(*lin, "num_heads", where + ": linear_attn_config"));
  K3_ASSIGN_OR_RETURN(m.kda_head_dim, PositiveInt(*lin, "head_dim", where + ": linear_attn_config"));
  m.kda_conv_kernel = OptionalInt(*lin, "short_conv_kernel_size", 4);
  auto full = lin->find("full_attn_layers");
  if (full == lin->end() || !full->is_array()) {
    return InvalidArgument("{}: linear_attn_config.full_attn_layers must be a list of layer numbers", where);
  }
  m.mla_layers = static_cast<int64_t>(full->size());
  if (m.mla_layers > layers)
    return InvalidArgument("{}: more full_attn_layers than num_hidden_layers", where);
  m.kda_layers = layers - m.mla_layers;
  m.mla_latent_values_per_token = kv_lora + rope_dim;
  m.cache_dtype_bytes = 2;
  // Per KDA layer (spec §6): fp32 state heads x K x V, plus fp32 conv tails of (kernel-1) taps over q, k, v.
  const int64_t width = m.kda_heads * m.kda_head_dim;
  m.kda_state_bytes_per_sequence = m.kda_layers * (m.kda_heads * m.kda_head_dim * m.kda_head_dim * 4 +
                                                   (m.kda_conv_kernel - 1) * 3 * width * 4);
  m.max_context = OptionalInt(*text, "max_position_embeddings", 0);
  m.hf_id = name;
  m.served_name = std::filesystem::path(name).filename().string();
  m.vllm_parsers = m.family == "kimi_k3" ? "kimi_k3" : "";
  if (m.family == "kimi_k3") m.vllm_env["VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"] = "1";
  m.weight_format = m.family == "kimi_k3" ? "MXFP4 experts + BF16" : "BF16";
  if (!index_json.empty()) {
    Json index = Json::parse(index_json, nullptr, false);
    const std::string index_where = name + "/model.safetensors.index.json";
    if (index.is_discarded() || !index.is_object())
      return InvalidArgument("{}: not a JSON object", index_where);
    auto meta = index.find("metadata");
    if (meta == index.end() || !meta->is_object()) {
      return InvalidArgument("{}: missing 'metadata' (needs metadata.total_size)", index_where);
    }
    K3_ASSIGN_OR_RETURN(m.weight_bytes, PositiveInt(*meta, "total_size", index_where + ": metadata"));
    m.weight_bytes_note = "metadata.total_size of model.safetensors.index.json";
  } else {
    if (weight_bytes_from_files <= 0) {
      return InvalidArgument("{}: no model.safetensors.index.json and no *.safetensors files to size", name);
    }
    m.weight_bytes = weight_bytes_from_files;
    m.weight_bytes_note = "sum of the *.safetensors file sizes";
  }
  return m;
}

Result<ModelSpec> ModelSpecFromCheckpoint(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const fs::path config_path = fs::is_directory(path, ec) ? dir / "config.json" : fs::path(path);
  K3_ASSIGN_OR_RETURN(std::string config, ReadFileToString(config_path.string()));
  std::string index;
  int64_t file_bytes = 0;
  if (fs::exists(dir / "model.safetensors.index.json", ec)) {
    K3_ASSIGN_OR_RETURN(index, ReadFileToString((dir / "model.safetensors.index.json").string()));
  } else {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file(ec) && entry.path().extension() == ".safetensors") {
        file_bytes += static_cast<int64_t>(entry.file_size(ec));
      }
    }
  }
  return ModelSpecFromConfigText(dir.string(), config, index, file_bytes);
}

}  // namespace k3::deploy
