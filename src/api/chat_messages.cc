// Chat messages: roles, content shapes, tool calls and history reasoning, each error naming its path.
#include "src/api/chat_messages.h"

#include <string>

#include <fmt/format.h>

#include "src/api/image_parts.h"

namespace k3::api {
namespace {

bool IsRole(const std::string& role) {
  return role == "system" || role == "developer" || role == "user" || role == "assistant" || role == "tool";
}

// content: a string, or an array of {"type": "text", "text": string} parts and (where images_allowed)
// image parts (image_parts.h; loaded later, by LoadImages); null only when allowed.
void CheckContent(FieldReader& message, bool null_allowed, bool images_allowed) {
  const nlohmann::json* content = message.Get("content");
  const std::string path = message.Path("content");
  if (content == nullptr) {
    if (!null_allowed) message.Fail(path, "required for this role (a string or an array of text parts)");
    return;
  }
  if (content->is_string()) return;
  if (!content->is_array()) {
    message.Fail(path, std::string("expected a string or an array of parts, got ") + JsonTypeName(*content));
    return;
  }
  for (size_t i = 0; i < content->size() && message.ok(); ++i) {
    const std::string part_path = fmt::format("{}[{}]", path, i);
    if (!(*content)[i].is_object()) {
      message.Fail(part_path,
                   std::string("expected a content part object, got ") + JsonTypeName((*content)[i]));
      return;
    }
    FieldReader part = message.Nested((*content)[i], part_path);
    const auto type = part.String("type");
    if (!part.ok()) return;
    if (!type) {
      part.Fail(part.Path("type"), "required (\"text\" or \"image_url\")");
    } else if (*type == "image_url" || *type == "input_image") {
      if (!images_allowed) {
        part.Fail(part.Path("type"), "an assistant message cannot hold an image");
      } else if (!ImagePartUrl((*content)[i])) {
        part.Fail(part.Path("image_url"), "required: a URL string, or an object with a string \"url\"");
      }
    } else if (*type == "video_url" || *type == "input_video" || *type == "video") {
      part.Fail(part.Path("type"), "video input is not supported: Kimi K3 servers take images only");
    } else if (*type != "text") {
      part.Fail(part.Path("type"), fmt::format("content parts of type \"{}\" are not supported (use \"text\" "
                                               "or \"image_url\" parts)",
                                               *type));
    } else if (!part.String("text") && part.ok()) {
      part.Fail(part.Path("text"), "required (a string)");
    }
  }
}

void CheckToolCalls(FieldReader& message) {
  const nlohmann::json* calls = message.Array("tool_calls");
  if (calls == nullptr) return;
  for (size_t i = 0; i < calls->size() && message.ok(); ++i) {
    const std::string path = fmt::format("{}[{}]", message.Path("tool_calls"), i);
    if (!(*calls)[i].is_object()) {
      message.Fail(path, std::string("expected a tool call object, got ") + JsonTypeName((*calls)[i]));
      return;
    }
    FieldReader call = message.Nested((*calls)[i], path);
    call.String("id");
    if (const auto type = call.String("type"); type && *type != "function")
      call.Fail(call.Path("type"), fmt::format("expected \"function\", got \"{}\"", *type));
    const nlohmann::json* function = call.Object("function");
    if (!call.ok()) return;
    if (function == nullptr) {
      call.Fail(call.Path("function"), "required (an object with a name)");
      return;
    }
    FieldReader fn = call.Nested(*function, call.Path("function"));
    const auto name = fn.String("name");
    if (fn.ok() && (!name || name->empty())) fn.Fail(fn.Path("name"), "required (a non-empty string)");
    const nlohmann::json* arguments = fn.Get("arguments");
    if (fn.ok() && arguments != nullptr && !arguments->is_string() && !arguments->is_object()) {
      fn.Fail(fn.Path("arguments"),
              std::string("expected a JSON string (or an object), got ") + JsonTypeName(*arguments));
    }
  }
}

}  // namespace

std::optional<nlohmann::json> ReadMessages(FieldReader& fields, int64_t max_messages) {
  const nlohmann::json* messages = fields.Array("messages");
  if (!fields.ok()) return std::nullopt;
  if (messages == nullptr || messages->empty()) {
    fields.Fail("messages", "required: a non-empty array of messages");
    return std::nullopt;
  }
  if (static_cast<int64_t>(messages->size()) > max_messages) {
    fields.Fail("messages",
                fmt::format("at most {} messages are accepted, got {}", max_messages, messages->size()));
    return std::nullopt;
  }
  nlohmann::json out = *messages;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string path = fmt::format("messages[{}]", i);
    if (!out[i].is_object()) {
      fields.Fail(path, std::string("expected a message object, got ") + JsonTypeName(out[i]));
      return std::nullopt;
    }
    FieldReader message = fields.Nested(out[i], path);
    const auto role = message.String("role");
    if (message.ok() && !role) message.Fail(message.Path("role"), "required");
    if (message.ok() && !IsRole(*role)) {
      message.Fail(message.Path("role"),
                   fmt::format("expected system, developer, user, assistant or tool, got \"{}\"", *role));
    }
    if (!message.ok()) return std::nullopt;
    message.String("name");
    CheckContent(message, /*null_allowed=*/*role == "assistant", /*images_allowed=*/*role != "assistant");
    if (*role == "assistant") {
      message.String("reasoning_content");
      message.String("reasoning");
      CheckToolCalls(message);
    } else if (*role == "tool") {
      message.String("tool_call_id");
    } else if (*role != "user") {
      message.Array("tools");  // system / developer: dynamic tool declarations
    }
    if (!message.ok()) return std::nullopt;
    if (*role == "developer") out[i]["role"] = "system";
  }
  return out;
}

}  // namespace k3::api
