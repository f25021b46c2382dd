// Greedy decoding over a Model, for `k3 run` and goldens: the prompt is prefilled in one Forward (logits
// of every prompt position), then each argmax token is fed back one decode step at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "src/base/status.h"
#include "src/model/model.h"

namespace k3::model {

// The k largest logits of one row [N] as (token id, logit), largest first (ties: lower id first).
std::vector<std::pair<int32_t, float>> TopLogits(std::span<const float> logits, int64_t k);

// Called with the token just fed (a prompt token or a generated one), its position, and the logits
// [N] that predict the next token.
using StepCallback = std::function<void(int64_t position, int32_t token, std::span<const float> logits)>;

// Called after each Execute (the prefill, then each decode step) with its output, hidden states captured
// (ForwardOutput::capture_hidden).
using ForwardCallback = std::function<void(const ForwardOutput& out)>;

// Prefills `prompt` and greedily generates `max_new` tokens. InvalidArgument for an empty prompt or a
// token id outside [0, vocab_size). Returns the generated ids. `prompt_embeddings`: rows of the prompt
// whose embeddings are given (an image's encoded rows over its <|media_pad|> ids).
Result<std::vector<int32_t>> GreedyGenerate(Model& model, std::span<const int32_t> prompt, int64_t max_new,
                                            const StepCallback& on_step,
                                            const ForwardCallback& on_forward = {},
                                            const std::vector<EmbeddingRun>& prompt_embeddings = {});

}  // namespace k3::model
