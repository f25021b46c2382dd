// The generator's presets: a name, the ModelConfig of the checkpoint it describes, and how large its
// safetensors shards may grow. See generator.h for what each preset is for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/io/model_config.h"

namespace k3::model {

struct GeneratorPreset {
  std::string name;
  io::ModelConfig config;
  uint64_t max_shard_bytes = 0;  // small for the tiny presets, so even they are really sharded
};

// The architecture flags of each family (spec §1, §7), leaving widths, vocabulary, layer lists and the
// AttnRes block size of a K3 model to the caller. Kimi K3: SiTU, latent MoE with a norm, MXFP4 experts,
// gated MLA, full-rank KDA output gate with the lower-bound decay gate, "language_model." tensor prefix.
// Kimi Linear: SiLU, full-width bf16 experts, MLA without q_lora or output gate, low-rank KDA output
// gate with the softplus decay gate, no AttnRes, no tensor prefix.
void SetKimiK3Architecture(io::ModelConfig& cfg);
void SetKimiLinearArchitecture(io::ModelConfig& cfg);

// Every preset, in the order `k3 gen-model --help` lists them.
const std::vector<GeneratorPreset>& GeneratorPresets();
// The preset called `name`, or InvalidArgument listing the known names.
Result<GeneratorPreset> FindGeneratorPreset(const std::string& name);

}  // namespace k3::model
