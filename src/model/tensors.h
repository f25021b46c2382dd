// The one list of a checkpoint's tensors, derived from a ModelConfig: the text tower (spec §3.2, §7) and,
// when the config has a vision_config, the vision tower and projector (vision.md §3).
// Loading checks a checkpoint against it, gen-model writes exactly it, and the planner sizes from it;
// nothing else spells tensor names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/io/dtype.h"
#include "src/io/model_config.h"

namespace k3::model {

// How gen-model fills a tensor with deterministic random values of a sane scale.
enum class InitKind {
  kLinear,       // normal, std = 1/sqrt(fan_in)
  kEmbedding,    // normal, std = 1
  kNormWeight,   // 1 + small noise
  kConv,         // normal, std = 1/sqrt(kernel)
  kALog,         // log(uniform[1, 16])
  kDtBias,       // small normal
  kRouterBias,   // small normal (e_score_correction_bias)
  kMxfp4Packed,  // MXFP4 codes of a kLinear matrix; its scales are the next entry (kMxfp4Scale)
  kMxfp4Scale,
  kSentinel,
};

struct TensorSpec {
  std::string name;                        // full checkpoint name, prefix included
  std::vector<int64_t> shape;              // as stored
  io::DType dtype;                         // what gen-model writes
  std::vector<io::DType> accepted_dtypes;  // what loading accepts (always contains dtype)
  InitKind init = InitKind::kLinear;
  int64_t fan_in = 0;  // logical input width of a matrix (MXFP4: unpacked), for kLinear init
};

// Layer-scoped name: "<prefix>model.layers.<layer>.<suffix>".
std::string LayerTensorName(const io::ModelConfig& cfg, int64_t layer, const std::string& suffix);
// Global name: "<prefix><suffix>" (e.g. "model.norm.weight", "lm_head.weight").
std::string GlobalTensorName(const io::ModelConfig& cfg, const std::string& suffix);

// The routed expert a tensor belongs to ("...block_sparse_moe.experts.7.w1.weight_packed" -> 7), or -1 for
// every other tensor (shared experts included).
int64_t RoutedExpertOfTensor(std::string_view name);

// All text tensors in a stable order: globals, then per layer (norms, attention, ffn, experts by index).
std::vector<TensorSpec> ListTensors(const io::ModelConfig& cfg);

// The vision tower's and projector's tensors ("vision_tower.*", "mm_projector.*", all bf16) in a stable
// order: patch embedding, position grid, blocks, final norm, projector. Empty without cfg.vision.
std::vector<TensorSpec> ListVisionTensors(const io::ModelConfig& cfg);
// "vision_tower.encoder.blocks.<block>.<suffix>".
std::string VisionBlockTensorName(int64_t block, const std::string& suffix);

// Parameter counts (logical elements; MXFP4 counts unpacked values).
struct ParameterCount {
  int64_t total = 0;
  int64_t routed_experts = 0;
  int64_t active_per_token = 0;  // excluding the embedding table
};
ParameterCount CountParameters(const io::ModelConfig& cfg);

}  // namespace k3::model
