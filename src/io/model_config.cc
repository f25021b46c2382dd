// ModelConfig's derived facts (layer schedule) and LoadModelConfig. Parsing is in
// model_config_parse.cc, serialising in model_config_json.cc.
#include "src/io/model_config.h"

#include <algorithm>

#include "src/base/check.h"
#include "src/base/file.h"

namespace k3::io {

AttentionKind ModelConfig::LayerAttention(int64_t layer) const {
  K3_CHECK(layer >= 0 && layer < num_layers);
  // kda_layers is 1-based (spec §1.3).
  const bool kda = std::find(kda_layers.begin(), kda_layers.end(), layer + 1) != kda_layers.end();
  return kda ? AttentionKind::kKda : AttentionKind::kMla;
}

FfnKind ModelConfig::LayerFfn(int64_t layer) const {
  K3_CHECK(layer >= 0 && layer < num_layers);
  if (num_experts == 0 || layer < first_k_dense_replace) return FfnKind::kDense;
  if (moe_layer_freq <= 0 || (layer - first_k_dense_replace) % moe_layer_freq != 0) return FfnKind::kDense;
  return FfnKind::kMoe;
}

int64_t ModelConfig::num_kda_layers() const {
  int64_t count = 0;
  for (int64_t layer = 0; layer < num_layers; ++layer) count += LayerAttention(layer) == AttentionKind::kKda;
  return count;
}

int64_t ModelConfig::num_mla_layers() const { return num_layers - num_kda_layers(); }

Result<ModelConfig> LoadModelConfig(const std::string& dir) {
  const std::string path = dir + "/config.json";
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    return Status(
        text.status().code(),
        fmt::format("{}; fix: point at a checkpoint directory holding config.json", text.status().message()));
  }
  return ParseModelConfig(*text, path);
}

}  // namespace k3::io
