// POST /v1/responses (OpenAI's Responses API, as vLLM serves it): text in, reasoning + message + function
// calls out, streaming as typed events.
//
// A request is translated into the chat completion it means and checked by ParseChatCompletion, so both
// routes accept and refuse the same things:
//   input (a string, or items: messages with string or input_text / output_text parts; function_call;
//   function_call_output; reasoning items are dropped)  -> messages; instructions -> a system message first
//   tools [{type: function, name, description, parameters}] -> chat tools; tool_choice, parallel_tool_calls
//   max_output_tokens -> max_tokens; temperature, top_p, top_k, seed, ... as in chat
//   reasoning.effort: "none" turns thinking off, any other effort leaves it on
//   text.format: text | json_object | json_schema {name, schema, strict} -> response_format
// Refused with a 400 naming the field: previous_response_id and background (responses are not stored),
// truncation other than "disabled", tools of other types (web_search, file_search, ...), input_image /
// input_file parts. store, include, metadata and user are accepted and do not change the output.
//
// Output: a "response" object whose output is [reasoning item (when there is reasoning text), message item
// (output_text), function_call items], status "completed", or "incomplete" with
// incomplete_details.reason "max_output_tokens". Streaming: response.created, response.in_progress, then
// per item output_item.added, (content_part.added,) the deltas (reasoning_text.delta, output_text.delta,
// function_call_arguments.delta), their .done events, output_item.done, and response.completed /
// response.incomplete (response.failed on an engine error); every event has "type" and "sequence_number".
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

struct ResponsesPlan {
  ChatPlan chat;        // the chat completion the request means (its request goes to the engine)
  bool stream = false;  // (as chat.stream; Generation reads these two)
  int32_t n = 1;
  nlohmann::json echo;  // request fields the response object repeats (tools, tool_choice, temperature, ...)
};
std::optional<ResponsesPlan> ParseResponses(std::string_view body, const ServerContext& ctx, ApiError* error);

// Engine events of one /v1/responses request -> typed stream events or, at the end, the response object.
class ResponsesResponder {
 public:
  static constexpr bool kDoneMarker = false;  // Responses streams end with response.completed, no [DONE]
  ResponsesResponder(const ResponsesPlan& plan, const ServerContext& ctx, std::string id, int64_t created);
  ~ResponsesResponder();
  std::vector<std::string> OnEvent(const engine::Event& event);
  std::string FinalBody() const;
  const std::optional<ApiError>& failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace k3::api
