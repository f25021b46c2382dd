// Sampler: turns one logits row [N] into the next token of one choice (OpenAI / vLLM semantics).
//
// Order per step: logprobs of the raw row (log-softmax) -> logit_bias -> masks (constraint, min_tokens)
// -> repetition penalty (prompt and output ids: positive logits divided, negative multiplied) ->
// frequency / presence penalties (output counts) -> greedy argmax when temperature is 0, else
// logits / temperature -> top_k -> top_p -> min_p -> one draw. Each filter sets removed logits to -inf.
// The draw uses the choice's own generator (seed + choice when seeded), consuming exactly one 64-bit
// value per sampled token, so results do not depend on what else runs in the batch.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "src/engine/engine.h"

namespace k3::engine {

// Keeps the k largest logits (ties: lower id first); k <= 0 or k >= N: unchanged.
void ApplyTopK(std::span<float> logits, int64_t k);
// Keeps the smallest set of most likely ids whose probability sums to >= p (at least one id).
void ApplyTopP(std::span<float> logits, float p);
// Keeps ids whose probability is >= min_p * the largest probability.
void ApplyMinP(std::span<float> logits, float min_p);
// In place log-softmax of a row (-inf stays -inf).
void LogSoftmax(std::span<float> row);
// Largest logit (ties: lower id); -1 if every logit is -inf.
int32_t ArgMax(std::span<const float> logits);
// Draws from softmax(logits) with u in [0, 1): the first id (in id order, O(N), no sort) whose cumulative
// probability exceeds u. -1 if every logit is -inf.
int32_t DrawFromLogits(std::span<const float> logits, double u);
// The sampled token's logprob and the top k of a log-softmax row.
TokenLogprob MakeTokenLogprob(std::span<const float> logprobs, int32_t token, int32_t k);

class Sampler {
 public:
  Sampler(const SamplingParams& params, uint64_t seed, std::span<const int32_t> prompt);

  // Samples from `logits` [N]. `allowed`: optional bitset ((N + 63) / 64 words) of allowed ids; `banned`:
  // ids masked this step (eos / stop ids before min_tokens). Returns -1 when no id is allowed.
  // Fills *logprob when params.logprobs >= 0.
  int32_t Sample(std::span<const float> logits, const uint64_t* allowed, std::span<const int32_t> banned,
                 TokenLogprob* logprob);
  // Records a generated token (penalty counts).
  void Accept(int32_t token);

 private:
  const SamplingParams& params_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  std::vector<int32_t> prompt_ids_;  // sorted unique (repetition penalty)
  std::vector<float> work_;
};

}  // namespace k3::engine
