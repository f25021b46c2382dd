// Test helpers: small K3-family configs built in memory and models over random tensors of exactly
// ListTensors(config), so model tests need no files and no generator. Not part of k3_model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/base/thread_pool.h"
#include "src/io/model_config.h"
#include "src/io/safetensors.h"
#include "src/model/model.h"

namespace k3::model::testing {

// Every K3 feature at toy width: 6 layers (KDA, KDA, MLA, KDA, KDA, MLA), AttnRes block 2 (3 frozen
// blocks), dense layer 0 then latent MoE with MXFP4 experts (8 experts, top 2), SiTU, gated MLA with
// q_lora, lower-bound KDA gate, full-rank KDA output gate.
io::ModelConfig TinyK3Config();
// The Kimi Linear variant: residual stream, SiLU, bf16 full-width experts, low-rank KDA gate, softplus
// gate, q_proj without lora, no MLA output gate, routed scaling 2.5.
io::ModelConfig TinyKimiLinearConfig();

// Random tensors for ListTensors(cfg) (scales as gen-model uses), owned in memory.
struct RandomTensors {
  std::map<std::string, io::TensorView> views;
  std::vector<std::vector<uint8_t>> bytes;  // one buffer per tensor
  const io::TensorView* Find(const std::string& name) const;
};
std::shared_ptr<RandomTensors> MakeRandomTensors(const io::ModelConfig& cfg, uint32_t seed);

// Model::FromTensors over MakeRandomTensors(cfg, seed).
Result<std::unique_ptr<Model>> MakeRandomModel(const io::ModelConfig& cfg, uint32_t seed, ThreadPool* pool);

// Writes DIR/config.json (ModelConfigToJson) and DIR/model.safetensors with MakeRandomTensors(cfg, seed),
// leaving out the tensor named `skip_tensor` if any. DIR must exist.
Status WriteRandomCheckpoint(const io::ModelConfig& cfg, uint32_t seed, const std::string& dir,
                             const std::string& skip_tensor = "");

// max over rows of ||got_row - want_row|| / ||want_row|| for row-major [rows, width] arrays.
double MaxRowRelativeError(const float* got, const float* want, int64_t rows, int64_t width);

}  // namespace k3::model::testing
