// The sampling fields that chat and text completions share (OpenAI + vLLM extras), read with type and
// range checks into engine::SamplingParams. max_tokens and logprobs differ per endpoint and are read by
// the callers; the context-length rule is ApplyContextLimit.
#pragma once

#include <cstdint>
#include <optional>

#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/engine/engine.h"

namespace k3::api {

// temperature [0, 100], top_p (0, 1], top_k -1 / 0 (off) or >= 1, min_p [0, 1], presence_penalty and
// frequency_penalty [-2, 2], repetition_penalty (0, 10], seed (int64), stop (string or array of
// strings; empty strings ignored), stop_token_ids (ids < vocab_size), ignore_eos, min_tokens >= 0,
// logit_bias ({"id": bias}, ids < vocab_size, bias in [-100, 100]), n [1, max_n].
void ReadSamplingFields(FieldReader& fields, size_t vocab_size, int32_t max_n,
                        engine::SamplingParams* sampling);

// A default max_tokens (the generation config's max_new_tokens) capped by the room the prompt leaves (at
// least 1, so that a prompt too long is still ApplyContextLimit's error).
int64_t DefaultMaxTokens(int64_t default_max_tokens, int64_t prompt_tokens, const ServerContext& ctx);

// max_tokens (given or not) against the context: a prompt that leaves no room is a 400, and so is
// prompt + max_tokens > max_model_len; min_tokens must not exceed max_tokens. With max_model_len 0
// (unknown) only min_tokens is checked. nullopt: ok.
std::optional<ApiError> ApplyContextLimit(int64_t prompt_tokens, const ServerContext& ctx,
                                          const std::string& prompt_param, engine::SamplingParams* sampling);

}  // namespace k3::api
