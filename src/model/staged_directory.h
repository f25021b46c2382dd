// Staged directories: generated checkpoints are written into a fresh directory next to their
// destination and only then moved into place, so an interrupted run never leaves a directory that looks
// like a whole checkpoint.
#pragma once

#include <string>

#include "src/base/status.h"

namespace k3::model {

// Creates an empty, uniquely named directory "<final_dir>.tmp-<pid>-<n>" beside final_dir (creating
// final_dir's parent directories if needed) and returns its path.
Result<std::string> MakeStagingDirectory(const std::string& final_dir);

// Moves everything in staged_dir into final_dir and removes staged_dir. When final_dir is missing or
// empty this is one rename. Otherwise (overwriting an old checkpoint) the old model.safetensors.index.json
// is removed first, then the old model*.safetensors shards, then the staged files are renamed in one by
// one with the new index last; other files in final_dir are left alone unless a staged file replaces them.
Status PublishStagedDirectory(const std::string& staged_dir, const std::string& final_dir);

// Removes a staging directory and its contents; errors are ignored (used on failure paths).
void RemoveStagingDirectory(const std::string& staged_dir);

}  // namespace k3::model
