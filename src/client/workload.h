// The request bodies of a k3 bench run: synthetic prompts (input length in words, a shared prefix
// fraction, a fixed output length) or a JSONL dataset. The client has no tokenizer (it works against
// any server), so synthetic lengths are counted in filler words and the token counts reported come from
// the server's usage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace k3::client {

struct WorkloadOptions {
  std::string model;
  int num_prompts = 100;
  int input_len = 256;      // filler words per synthetic prompt
  int output_len = 128;     // max_tokens
  double prefix_share = 0;  // fraction of input_len shared by every prompt (0..1)
  std::string dataset;  // JSONL: {"prompt": "..."} or {"messages": [...]}, optional "max_tokens"/"output_len"
  bool ignore_eos = false;  // send vLLM's ignore_eos so every request yields output_len tokens
  uint64_t seed = 0;
};

// num_prompts JSON bodies for /v1/chat/completions with stream + include_usage. A dataset shorter than
// num_prompts is cycled; bad lines are errors naming the line.
Result<std::vector<std::string>> BuildWorkload(const WorkloadOptions& options);

// Deterministic filler text of `words` words (what synthetic prompts are made of).
std::string FillerWords(int64_t words, uint64_t seed);

}  // namespace k3::client
