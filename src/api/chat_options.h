// The chat request fields that shape the prompt and the output parsing: thinking (chat_template_kwargs,
// reasoning_effort), tools / tool_choice / parallel_tool_calls and response_format. They become
// chat::RenderOptions, chat::ParserOptions and the description of an output constraint.
//
// Thinking defaults follow the spec (§4.2) and chat::RenderOptions: on, effort "max". Switches, later
// ones winning: top-level `thinking` (bool, or {"type": "enabled" | "disabled"} as Moonshot's API
// takes it), `reasoning_effort`, then chat_template_kwargs.{thinking, enable_thinking,
// thinking_effort}. Effort values: low, medium, high, max; OpenAI's "minimal" means low and "none"
// turns thinking off.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/chat/output_parser.h"
#include "src/chat/xtml_renderer.h"

namespace k3::api {

struct ChatOptions {
  chat::RenderOptions render;
  chat::ParserOptions parser;
  bool include_reasoning = true;
  // Output constraint: a JSON value (response_format json_object / json_schema) or a forced tool call
  // (tool_choice "required", or named: forced_function non-empty).
  bool json_output = false;
  nlohmann::json json_schema;                                            // null: any JSON object
  std::string json_schema_field = "response_format.json_schema.schema";  // where the schema came from
  bool tool_call_required = false;
  std::string forced_function;
  // vLLM's guided_regex / guided_choice (or structured_outputs.regex / .choice): plain-text replies.
  std::optional<std::string> guided_regex;
  std::optional<std::vector<std::string>> guided_choice;
  std::string guided_field;
  bool parallel_tool_calls = true;
};

// Thinking switches and effort into render->thinking / thinking_effort (also used by /tokenize).
void ReadThinkingOptions(FieldReader& fields, chat::RenderOptions* render);

// add_generation_prompt (default true) and continue_final_message (default false) into `render`; both
// true is a 400 on continue_final_message, as vLLM answers (also used by /tokenize and the render route).
void ReadPromptEnd(FieldReader& fields, chat::RenderOptions* render);

// After rendering: a prompt that leaves the response channel open (thinking off, or a continued
// response) is parsed and constrained as output that starts in the response, with no reasoning first.
void MatchOpenChannel(chat::OpenChannel channel, ChatOptions* options);

// Everything above; errors go to `fields`.
ChatOptions ReadChatOptions(FieldReader& fields, const ServerContext& ctx);

}  // namespace k3::api
