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

// Every preset, in the order `k3 gen-model --help` lists them.
const std::vector<GeneratorPreset>& GeneratorPresets();
// The preset called `name`, or InvalidArgument listing the known names.
Result<GeneratorPreset> FindGeneratorPreset(const std::string& name);

}  // namespace k3::model
