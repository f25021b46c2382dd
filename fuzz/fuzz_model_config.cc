// Fuzzes ParseModelConfig with arbitrary config.json text: it must return a Status, or a config whose
// layer schedule is well defined and which survives ModelConfigToJson -> ParseModelConfig unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "src/io/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cfg = k3::io::ParseModelConfig(text, "config.json");
  if (!cfg.ok()) {
    if (cfg.status().message().empty()) std::abort();  // every error must explain itself
    return 0;
  }
  int64_t kda = 0;
  for (int64_t layer = 0; layer < cfg->num_layers; ++layer) {
    kda += cfg->LayerAttention(layer) == k3::io::AttentionKind::kKda;
    (void)cfg->LayerFfn(layer);
  }
  if (kda != cfg->num_kda_layers() || kda + cfg->num_mla_layers() != cfg->num_layers) std::abort();
  auto back = k3::io::ParseModelConfig(k3::io::ModelConfigToJson(*cfg).dump(), "round-trip config.json");
  if (!back.ok() || !(*back == *cfg)) std::abort();
  return 0;
}
