// Validation of a chat request's `messages` (OpenAI shapes, plus `reasoning_content` / `reasoning` in
// assistant history as vLLM and Moonshot accept them). Returns the messages ready for chat::RenderXtml:
// the same JSON with role "developer" rendered as "system" (OpenAI's newer name for it).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "src/api/json_fields.h"
#include "src/api/openai.h"

namespace k3::api {

// Reads fields["messages"]: a non-empty array of at most ctx.max_messages objects with role system,
// developer, user, assistant or tool; content a string or an array of text parts (null allowed for
// assistant), name a string; assistant tool_calls [{id?, type "function", function {name, arguments
// (a string or an object)}}], reasoning_content / reasoning strings; tool tool_call_id a string;
// system tools (dynamic declarations) an array. Errors go to `fields`.
std::optional<nlohmann::json> ReadMessages(FieldReader& fields, int64_t max_messages);

}  // namespace k3::api
