// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API, as vLLM serves it.
//
// A request is translated into the chat completion it means and checked by ParseChatCompletion (as
// responses.h does), so both routes accept and refuse the same things:
//   system (a string or text blocks), and messages with role system
//                                                      -> one system message first (text joined; blocks
//                                                         starting x-anthropic-billing-header dropped)
//   messages[i] {role: user | assistant, content: a string or blocks}:
//     text                                             -> text parts
//     image {source: {type: base64, media_type, data}} -> an image_url part with a data: URL
//     image {source: {type: url, url}}                 -> an image_url part with that URL (allowlists apply)
//     tool_result {tool_use_id, content: string | [text | image blocks], is_error}
//                                                      -> a tool message (before the user's other content)
//     tool_use {id, name, input} (assistant)           -> tool_calls [{id, function {name, arguments}}]
//     thinking {thinking, signature} (assistant)       -> reasoning_content; redacted_thinking is dropped
//   tools [{name, description, input_schema}]          -> chat function tools
//   tool_choice {type: auto | any | tool | none, name, disable_parallel_tool_use}
//                                                      -> "auto" | "required" | named | "none"
//   max_tokens (required), stop_sequences -> stop, temperature, top_p, top_k, stream, metadata (ignored)
//   thinking {type: enabled | adaptive | disabled, budget_tokens} -> K3's thinking switch (budget ignored)
//   output_config {effort, format {type: json_schema, schema}} -> reasoning_effort, response_format
// Refused with a 400 naming the field: other block types (document, search_result, ...), server tools
// (tools[i].type other than "custom"), mcp_servers, container.
//
// Output: a "message" object {id: "msg_...", type, role: assistant, model, content: [thinking block, text
// block, tool_use blocks {id: "toolu_...", name, input}], stop_reason: end_turn | max_tokens |
// stop_sequence | tool_use, stop_sequence, usage {input_tokens, output_tokens, cache_read_input_tokens,
// cache_creation_input_tokens}}. input_tokens counts the whole prompt (cached tokens included, as vLLM
// reports it), so it equals count_tokens' answer. Streaming: message_start, ping, per block
// content_block_start / content_block_delta (thinking_delta + signature_delta, text_delta,
// input_json_delta) / content_block_stop, message_delta {stop_reason, stop_sequence, usage},
// message_stop; an engine failure is an "error" event. Each stream payload is "event: NAME\n" + JSON
// (the server writes the first line as the SSE event field).
// Errors on these routes have Anthropic's shape: {"type": "error", "error": {"type", "message"}}.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/api/openai.h"

namespace k3::api {

struct AnthropicPlan {
  ChatPlan chat;        // the chat completion the request means (its request goes to the engine)
  bool stream = false;  // (as chat.stream; Generation reads these two)
  int32_t n = 1;
};
std::optional<AnthropicPlan> ParseAnthropicMessages(std::string_view body, const ServerContext& ctx,
                                                    ApiError* error);

// POST /v1/messages/count_tokens: {"input_tokens": N}, the prompt tokens the same request (without
// max_tokens) would have, or nullopt with *error set.
std::optional<std::string> AnthropicCountTokens(std::string_view body, const ServerContext& ctx,
                                                ApiError* error);

// {"type": "error", "error": {"type", "message"}}; the error type follows the HTTP status
// (400 invalid_request_error, 401 authentication_error, 403 permission_error, 404 not_found_error,
// 413 request_too_large, 429 rate_limit_error, 503 overloaded_error, else api_error).
std::string AnthropicErrorBody(const ApiError& error);
std::string AnthropicErrorBody(int http_status, std::string_view message);

// Engine events of one /v1/messages request -> stream events or, at the end, the message object.
class AnthropicResponder {
 public:
  static constexpr bool kDoneMarker = false;  // the stream ends with message_stop
  AnthropicResponder(const AnthropicPlan& plan, const ServerContext& ctx, std::string id, int64_t created);
  ~AnthropicResponder();
  std::vector<std::string> OnEvent(const engine::Event& event);
  std::string FinalBody() const;
  const std::optional<ApiError>& failure() const;
  // The body to answer a failure with (Anthropic's error shape).
  static std::string FailureBody(const ApiError& error) { return AnthropicErrorBody(error); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace k3::api
