// Pieces shared by the chat and text-completion responders: usage, finish and stop reasons, token
// logprobs in the chat and legacy shapes, and tool-call ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/engine/engine.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::api {

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}.
nlohmann::json UsageJson(const engine::Usage& usage);

// "stop", "length", "abort", "error" (OpenAI / vLLM names); null for kNone. A choice that stopped
// normally after calling tools finishes with "tool_calls".
nlohmann::json FinishReasonJson(engine::FinishReason reason, bool called_tools);

// vLLM's stop_reason: the stop token id as a number when it is one of stop_token_ids, the matched stop
// string as a string when it is one of `stop`, else null.
nlohmann::json StopReasonJson(const std::string& stop_reason, const std::vector<int32_t>& stop_token_ids,
                              const std::vector<std::string>& stop);

// A logprob as JSON can carry it: -inf (and NaN) become -9999.0, as vLLM does.
double JsonLogprob(float logprob);

// The token's text (specials by name, ill-formed UTF-8 replaced by U+FFFD) and its raw bytes; with
// as_token_id (vLLM's --return-tokens-as-token-ids) the text is "token_id:N" and the bytes are its bytes.
struct TokenText {
  std::string text;
  std::vector<int> bytes;
};
TokenText DescribeToken(const tokenizer::Tokenizer& tokenizer, int32_t id, bool as_token_id = false);

// vLLM's prompt_logprobs: [null, {"<id>": {"logprob", "rank", "decoded_token"}, ...}, ...], one entry per
// prompt token (the first has none); each dict holds the prompt token and the top k.
nlohmann::json PromptLogprobsJson(const tokenizer::Tokenizer& tokenizer,
                                  const std::vector<engine::TokenLogprob>& prompt_logprobs);

// Chat logprobs entries: {"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}.
nlohmann::json ChatLogprobEntries(const tokenizer::Tokenizer& tokenizer,
                                  const std::vector<engine::TokenLogprob>& logprobs,
                                  bool as_token_ids = false);

// Legacy /v1/completions logprobs {"tokens", "token_logprobs", "top_logprobs", "text_offset"}, with
// offsets counted from text_offset_start (advanced past the tokens).
nlohmann::json LegacyLogprobs(const tokenizer::Tokenizer& tokenizer,
                              const std::vector<engine::TokenLogprob>& logprobs, int64_t* text_offset_start,
                              bool as_token_ids = false);
// Appends the arrays of `more` to `into` (both in the legacy shape).
void AppendLegacyLogprobs(nlohmann::json* into, const nlohmann::json& more);

// "call_" + 24 characters derived from the response id, choice and call number: unique per response and
// the same for the streaming and the non-streaming form of one response.
std::string ToolCallId(const std::string& response_id, int32_t choice, size_t call);

}  // namespace k3::api
