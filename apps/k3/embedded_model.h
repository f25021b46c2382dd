// The embedded model: `k3 run` / `k3 serve` without --model use a tiny-k3 checkpoint (weights, config and
// tokenizer files) generated once into the user's cache directory, e.g. ~/.cache/k3stack/tiny-k3-s0-v<N>.
#pragma once

#include <string>

#include "src/base/status.h"

namespace k3::app {

// Returns the directory of the embedded model, generating it first if it is missing (atomically: into a
// temporary directory renamed into place, so an interrupted run never leaves a half model).
Result<std::string> EnsureEmbeddedModel();

// Writes a full checkpoint directory: GenerateCheckpoint + the tokenizer files for its vocabulary.
Status GenerateFullCheckpoint(const std::string& preset, uint64_t seed, const std::string& out_dir);

}  // namespace k3::app
