// OpenAI-compatible request parsing and response building (no I/O; src/server does the HTTP).
//
//   api::ApiError err;
//   auto plan = api::ParseChatCompletion(body, ctx, &err);     // nullopt: err holds status + message
//   auto id = engine->Submit(std::move(plan->request), cb);
//   api::ChatResponder responder(*plan, ctx, "chatcmpl-...", created);
//   for each engine Event: for (auto& chunk : responder.OnEvent(e)) write "data: " + chunk + "\n\n";
//   non-streaming: after the request_done event, responder.FinalBody().
//
// Validation is strict in types and ranges and lenient in unknown fields (ignored, like vLLM). Every
// error names the field ("messages[2].content: expected a string or an array of parts").
#pragma once

#include <algorithm>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/api/generation_config.h"
#include "src/chat/output_parser.h"
#include "src/chat/output_schema_check.h"
#include "src/chat/stream_parser.h"
#include "src/engine/engine.h"
#include "src/tokenizer/incremental_decoder.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::api {

struct MediaSettings;

// An OpenAI-shaped error: {"error": {"message", "type", "param", "code"}} with its HTTP status.
// The error `type` in either API's body comes from http_status alone (error_table.h).
struct ApiError {
  int http_status = 400;
  std::string message;
  std::string param;  // the offending field, or empty (null)
  std::string code;   // or empty (null)
};
std::string ErrorBody(const ApiError& error);

// What the server knows that requests are checked against.
struct ServerContext {
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::string served_model_name;                  // the name responses and metrics use; an accepted "model"
  std::vector<std::string> served_model_aliases;  // more accepted names (vLLM's --served-model-name A B)
  // True when `model` is one of the served names (any other "model" is a 404).
  bool Serves(const std::string& model) const {
    return model == served_model_name || std::find(served_model_aliases.begin(), served_model_aliases.end(),
                                                   model) != served_model_aliases.end();
  }
  int64_t max_model_len = 0;  // prompt + max_tokens must fit
  int32_t max_logprobs = 20;  // top_logprobs / completions' logprobs above it are a 400 (--max-logprobs)
  int32_t max_n = 16;
  int64_t max_messages = 4096;
  std::vector<int32_t> eos_token_ids;   // ends a message (e.g. <|end_of_msg|>)
  bool enable_auto_tool_choice = true;  // tool_choice "auto" allowed with tools (else HTTP 400, as vLLM
                                        // without --enable-auto-tool-choice / --tool-call-parser)
  int64_t created = 0;                  // unix time of model load (/v1/models)
  bool reasoning_parser = true;         // false: reasoning text stays in content, no reasoning_content
                                        // (vLLM without --reasoning-parser)
  bool reasoning_alias = true;          // also send reasoning text as "reasoning" (vLLM >= 0.11 name)
  SamplingDefaults sampling_defaults;   // generation config: what a request that omits a field gets
  // Images (image_parts.h): the processor, limits and URL fetcher; null: image parts are a 400.
  std::shared_ptr<const MediaSettings> media;
  // The role chat responses name (vLLM's --response-role).
  std::string response_role = "assistant";
  // Streams end with a usage chunk without stream_options.include_usage (--enable-force-include-usage).
  bool force_include_usage = false;
  // Logprob tokens as "token_id:N" strings (--return-tokens-as-token-ids).
  bool return_tokens_as_token_ids = false;
};

// A validated /v1/chat/completions request, ready for Engine::Submit.
struct ChatPlan {
  engine::Request request;
  std::string model;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats: usage so far in every chunk
  chat::ParserOptions parser;     // thinking on/off, tools enabled
  std::string prompt_text;        // the rendered prompt, special markers written by name
  bool logprobs = false;
  int32_t top_logprobs = 0;
  int32_t n = 1;
  int64_t prompt_tokens = 0;
  bool include_reasoning = true;        // vLLM's include_reasoning: false drops reasoning text
  int32_t prompt_logprobs = -1;         // vLLM's prompt_logprobs (k), -1: none
  std::vector<int32_t> stop_token_ids;  // copies of request.sampling's (the request is moved to
  std::vector<std::string> stop;        // Submit), to type stop_reason as a number or a string
  // What the grammar left to the end of generation (`not`, `uniqueItems`), or null: a finished choice
  // that breaks it gets finish_reason "schema_violation" and the violation as stop_reason.
  std::shared_ptr<const chat::OutputSchemaCheck> schema_check;
};
std::optional<ChatPlan> ParseChatCompletion(std::string_view body, const ServerContext& ctx, ApiError* error);

// One prompt of a /v1/completions request: its ids and text (for echo).
struct CompletionPrompt {
  std::vector<int32_t> ids;
  std::string text;
};

// A validated /v1/completions request: one or more prompts (a string, token ids, or a list of either),
// each one engine request with the same sampling; choice index = prompt index * n + choice.
struct CompletionPlan {
  engine::Request request;  // sampling + eos ids; its prompt is unused (see CompletionRequests)
  std::vector<CompletionPrompt> prompts;
  std::string model;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // as in ChatPlan
  bool echo = false;
  int32_t logprobs = -1;                // legacy integer logprobs (with echo: the prompt tokens' too)
  int32_t prompt_logprobs = -1;         // vLLM's prompt_logprobs (k), -1: none
  int32_t n = 1;                        // choices per prompt
  int64_t prompt_tokens = 0;            // over all prompts
  std::vector<int32_t> stop_token_ids;  // as in ChatPlan
  std::vector<std::string> stop;
};
inline constexpr size_t kMaxCompletionPrompts = 256;
std::optional<CompletionPlan> ParseCompletion(std::string_view body, const ServerContext& ctx,
                                              ApiError* error);
// The engine requests of a plan, one per prompt, in prompt order (moves the plan's request out).
std::vector<engine::Request> CompletionRequests(CompletionPlan* plan);

// Turns engine events of one chat request into OpenAI JSON: streaming chunks (chat.completion.chunk;
// role first, then reasoning_content / content / tool_calls deltas, finish_reason, and a usage chunk when
// include_usage) or, at the end, one chat.completion body. tool_calls finish with finish_reason
// "tool_calls". Not thread-safe: feed it from one strand.
class ChatResponder {
 public:
  static constexpr bool kDoneMarker = true;  // streams end with "data: [DONE]"
  ChatResponder(const ChatPlan& plan, const ServerContext& ctx, std::string id, int64_t created);
  // Streaming: the JSON payloads to send as SSE `data:` lines (the caller adds "data: [DONE]" after the
  // request_done event). Non-streaming: accumulates and returns nothing.
  std::vector<std::string> OnEvent(const engine::Event& event);
  // Non-streaming: the chat.completion body (valid after the request_done event).
  std::string FinalBody() const;
  // Set once an event ended a choice with FinishReason::kError (streaming: an error payload was also
  // returned by OnEvent; non-streaming: answer with this instead of FinalBody).
  const std::optional<ApiError>& failure() const;
  ~ChatResponder();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The same for /v1/completions (text_completion objects).
class CompletionResponder {
 public:
  static constexpr bool kDoneMarker = true;
  CompletionResponder(const CompletionPlan& plan, const ServerContext& ctx, std::string id, int64_t created);
  std::vector<std::string> OnEvent(const engine::Event& event);
  std::string FinalBody() const;
  const std::optional<ApiError>& failure() const;
  ~CompletionResponder();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// POST /tokenize ({"prompt": str} or {"messages": [...]} + add_generation_prompt) and POST /detokenize
// ({"tokens": [...]}) as vLLM answers them; GET /v1/models. Return the response body or nullopt + error.
std::optional<std::string> Tokenize(std::string_view body, const ServerContext& ctx, ApiError* error);
std::optional<std::string> Detokenize(std::string_view body, const ServerContext& ctx, ApiError* error);
std::string ModelsBody(const ServerContext& ctx);

// POST /v1/chat/completions/render and /v1/completions/render (vLLM's GPU-less tokenisation, used by
// llm-d): the request is validated as the generating route validates it, and answered with what the
// engine would be given, without generating. Chat: one object {request_id, model, token_ids, prompt (the
// rendered text; a k3 addition), features (null, or {"mm_placeholders": {"image": [{offset, length}]}}),
// stream}; completions: an array of such objects, one per prompt (request ids suffixed -0, -1, ... when
// there are several).
std::optional<std::string> RenderChatCompletion(std::string_view body, const ServerContext& ctx,
                                                std::string_view request_id, ApiError* error);
std::optional<std::string> RenderCompletion(std::string_view body, const ServerContext& ctx,
                                            std::string_view request_id, ApiError* error);

}  // namespace k3::api
