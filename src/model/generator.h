// Deterministic random-weight checkpoints of K3-family presets, in the real Hugging Face layout
// (config.json + sharded safetensors + index; routed experts MXFP4 in the compressed-tensors layout of
// spec §3.3 where the preset says so). Tokenizer files are written by src/tokenizer (apps/k3 combines
// both), since src/model sits below src/tokenizer.
//
// Presets:
//   tiny-k3           every K3 feature at toy width (KDA + >= 2 MLA layers, latent MoE with MXFP4
//                     experts, AttnRes with a small block size so several blocks freeze, SiTU); a few MB
//   tiny-kimi-linear  the Kimi Linear variant (residual stream, SiLU, bf16 experts, low-rank KDA gate)
//   mini-k3           the K3 architecture at >= 2 GB, for benchmarks only (never committed)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/io/model_config.h"

namespace k3::model {

std::vector<std::string> GeneratorPresetNames();
// The preset's config (vocab_size includes the 256 special ids after the BPE ranks).
Result<io::ModelConfig> GeneratorPresetConfig(const std::string& preset);
// Writes config.json and the safetensors shards + index into out_dir (created if missing). Same preset
// and seed give byte-identical files.
Status GenerateCheckpoint(const std::string& preset, uint64_t seed, const std::string& out_dir);

}  // namespace k3::model
