// A chat request as `k3 render-chat` takes it: an OpenAI chat request object (or just its messages
// array) -> messages + RenderOptions. Lenient on purpose (it is a debugging tool; the server validates
// requests strictly in src/api): unknown fields are ignored.
//   thinking: top-level "thinking" (bool), or chat_template_kwargs.thinking / enable_thinking
//   effort:   "reasoning_effort" / "thinking_effort", or chat_template_kwargs.thinking_effort
//   tools, tool_choice ("auto" | "required" | "none"), response_format,
//   add_generation_prompt, continue_final_message (both true: RenderXtml's error, as vLLM's 400)
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/chat/xtml_renderer.h"

namespace k3::chat {

struct RenderRequest {
  nlohmann::json messages;
  RenderOptions options;
};

Result<RenderRequest> ParseRenderRequest(std::string_view json_text);

}  // namespace k3::chat
