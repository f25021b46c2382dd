// Default sampling parameters, as vLLM takes them from the model's generation_config.json
// (--generation-config auto, the default; a folder; or vllm: none) and --override-generation-config
// (a JSON object with the same keys, layered on top). A request's own fields always win; max_new_tokens
// becomes the default max_tokens (capped by the room the prompt leaves).
//
//   {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0, "repetition_penalty": 1.0,
//    "max_new_tokens": 2048, "eos_token_id": ..., ...}      other keys are ignored, as by vLLM
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/engine/engine.h"

namespace k3::api {

struct SamplingDefaults {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int32_t> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<int64_t> max_tokens;  // max_new_tokens

  bool empty() const;
  // "temperature=0.6, top_p=0.95" (for the start-up log).
  std::string Describe() const;
};

// The keys above from a generation config object; a wrong type or range is InvalidArgument naming the
// key and `source` (the file or flag). Not an object: InvalidArgument.
Result<SamplingDefaults> ParseGenerationConfig(const nlohmann::json& config, const std::string& source);

// `over`'s values where it has them, else `base`'s.
SamplingDefaults MergeSamplingDefaults(const SamplingDefaults& base, const SamplingDefaults& over);

// Sets the sampling fields the defaults give (before a request's own fields are read).
void ApplySamplingDefaults(const SamplingDefaults& defaults, engine::SamplingParams* sampling);

}  // namespace k3::api
