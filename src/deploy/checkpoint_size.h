// Sizes a model the catalog does not know from its checkpoint directory (or a bare config.json):
// weight bytes from model.safetensors.index.json's metadata.total_size, else the sum of the
// *.safetensors files; cache geometry (MLA latent width, KDA heads / state) from config.json
// (spec k3-model.md §1, §6, §7). Reads only JSON and file sizes; never loads weights.
#pragma once

#include <string>

#include "src/base/status.h"
#include "src/deploy/catalog.h"

namespace k3::deploy {

// `path` is a checkpoint directory or a config.json file. Errors name the file and field.
Result<ModelSpec> ModelSpecFromCheckpoint(const std::string& path);

// Same, from already-read texts (index_json may be empty: then weight_bytes_from_files is used).
Result<ModelSpec> ModelSpecFromConfigText(const std::string& name, const std::string& config_json,
                                          const std::string& index_json, int64_t weight_bytes_from_files);

}  // namespace k3::deploy
