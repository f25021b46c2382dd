// Request JSON -> messages + render options.
#include "src/chat/render_request.h"

namespace k3::chat {
namespace {

const nlohmann::json* Find(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

Status ReadBool(const nlohmann::json& object, const char* key, bool& out) {
  if (const auto* value = Find(object, key)) {
    if (!value->is_boolean()) return InvalidArgument("'{}' must be true or false", key);
    out = value->get<bool>();
  }
  return OkStatus();
}

Status ReadString(const nlohmann::json& object, const char* key, std::string& out) {
  if (const auto* value = Find(object, key)) {
    if (!value->is_string()) return InvalidArgument("'{}' must be a string", key);
    out = value->get<std::string>();
  }
  return OkStatus();
}

}  // namespace

Result<RenderRequest> ParseRenderRequest(std::string_view json_text) {
  nlohmann::json request = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return InvalidArgument("the request is not valid JSON");
  RenderRequest out;
  if (request.is_array()) {
    out.messages = std::move(request);
    return out;
  }
  if (!request.is_object()) return InvalidArgument("expected a chat request object or a messages array");
  const auto* messages = Find(request, "messages");
  if (messages == nullptr || !messages->is_array()) return InvalidArgument("'messages' must be an array");
  out.messages = *messages;
  RenderOptions& options = out.options;
  K3_RETURN_IF_ERROR(ReadBool(request, "thinking", options.thinking));
  K3_RETURN_IF_ERROR(ReadString(request, "reasoning_effort", options.thinking_effort));
  K3_RETURN_IF_ERROR(ReadString(request, "thinking_effort", options.thinking_effort));
  if (const auto* kwargs = Find(request, "chat_template_kwargs")) {
    if (!kwargs->is_object()) return InvalidArgument("'chat_template_kwargs' must be an object");
    K3_RETURN_IF_ERROR(ReadBool(*kwargs, "enable_thinking", options.thinking));
    K3_RETURN_IF_ERROR(ReadBool(*kwargs, "thinking", options.thinking));
    K3_RETURN_IF_ERROR(ReadString(*kwargs, "thinking_effort", options.thinking_effort));
  }
  if (const auto* tools = Find(request, "tools")) {
    if (!tools->is_array()) return InvalidArgument("'tools' must be an array");
    options.tools = *tools;
  }
  if (const auto* choice = Find(request, "tool_choice")) {
    if (!choice->is_string()) {
      return Unimplemented("a named tool_choice is not rendered by k3 render-chat (use \"required\")");
    }
    options.tool_choice = choice->get<std::string>();
    if (options.tool_choice != "auto" && options.tool_choice != "required" && options.tool_choice != "none") {
      return InvalidArgument("tool_choice must be auto, required or none, got '{}'", options.tool_choice);
    }
  }
  if (const auto* format = Find(request, "response_format")) options.response_format = *format;
  K3_RETURN_IF_ERROR(ReadBool(request, "add_generation_prompt", options.add_generation_prompt));
  K3_RETURN_IF_ERROR(ReadBool(request, "continue_final_message", options.continue_final_message));
  return out;
}

}  // namespace k3::chat
