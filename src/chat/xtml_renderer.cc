// XTML renderer: builds the prompt as markers + ordinary text runs, then encodes it.
//
// UNCERTAIN (spec §4.2 names these messages but not their wording): the bodies of the tool-choice and
// response-format system messages below are k3stack's own.
#include "src/chat/xtml_renderer.h"

#include <algorithm>
#include <utility>

#include "src/chat/json_text.h"
#include "src/chat/xtml_markers.h"

namespace k3::chat {
namespace {

using tokenizer::SpecialTokens;
using tokenizer::TokenId;
using tokenizer::Tokenizer;

using Attributes = std::vector<std::pair<std::string, std::string>>;

// Accumulates markers and text; ordinary text between markers is encoded as one run.
class PromptBuilder {
 public:
  explicit PromptBuilder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  Status Marker(const char* name) {
    FlushText();
    K3_ASSIGN_OR_RETURN(TokenId id, tokenizer_.SpecialId(name));
    prompt_.ids.push_back(id);
    prompt_.text += name;
    return OkStatus();
  }
  void Text(std::string_view text) { pending_ += text; }

  Status OpenTag(std::string_view tag, const Attributes& attributes = {}) {
    K3_RETURN_IF_ERROR(Marker(kXtmlOpen));
    Text(tag);
    for (const auto& [key, value] : attributes) {
      Text(" ");
      Text(key);
      Text("=\"");
      Text(EscapeAttribute(value));
      Text("\"");
    }
    return Marker(kXtmlSep);
  }
  Status CloseTag(std::string_view tag) {
    K3_RETURN_IF_ERROR(Marker(kXtmlClose));
    Text(tag);
    return Marker(kXtmlSep);
  }
  Status Message(const Attributes& attributes, std::string_view body) {
    K3_RETURN_IF_ERROR(OpenTag("message", attributes));
    Text(body);
    K3_RETURN_IF_ERROR(CloseTag("message"));
    return Marker(kXtmlEndOfMsg);
  }

  // One image's prompt (vision.md §4), its pads recorded.
  Status Image(const ImagePart& image) {
    K3_RETURN_IF_ERROR(Marker("<|media_begin|>"));
    Text("image " + std::to_string(image.width) + "x" + std::to_string(image.height));
    K3_RETURN_IF_ERROR(Marker("<|media_content|>"));
    K3_ASSIGN_OR_RETURN(TokenId pad, tokenizer_.SpecialId("<|media_pad|>"));
    prompt_.images.push_back(
        RenderedImage{image.message, image.part, static_cast<int64_t>(prompt_.ids.size()), image.num_tokens});
    prompt_.ids.insert(prompt_.ids.end(), static_cast<size_t>(image.num_tokens), pad);
    for (int64_t i = 0; i < image.num_tokens; ++i) prompt_.text += "<|media_pad|>";
    return Marker("<|media_end|>");
  }

  RenderedPrompt Finish(OpenChannel open_channel) {
    FlushText();
    prompt_.open_channel = open_channel;
    return std::move(prompt_);
  }

 private:
  void FlushText() {
    if (pending_.empty()) return;
    tokenizer_.EncodeAppend(pending_, SpecialTokens::kDisallowed, prompt_.ids);
    prompt_.text += pending_;
    pending_.clear();
  }

  const Tokenizer& tokenizer_;
  RenderedPrompt prompt_;
  std::string pending_;
};

bool IsImagePartType(const std::string& type) {
  return type == "image_url" || type == "image" || type == "input_image";
}

std::string PartType(const nlohmann::json& part) {
  return part.is_object() && part.contains("type") && part["type"].is_string()
             ? part["type"].get<std::string>()
             : std::string();
}

// String content, or the text parts of an array concatenated (assistant messages: no images).
Result<std::string> ContentText(const nlohmann::json& message, size_t index) {
  const auto content = message.find("content");
  if (content == message.end() || content->is_null()) return std::string();
  if (content->is_string()) return content->get<std::string>();
  if (!content->is_array())
    return InvalidArgument("messages[{}].content must be a string, an array or null", index);
  std::string text;
  for (size_t p = 0; p < content->size(); ++p) {
    const nlohmann::json& part = (*content)[p];
    const std::string type = PartType(part);
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) {
        return InvalidArgument("messages[{}].content: a text part needs a string 'text'", index);
      }
      text += part["text"].get<std::string>();
    } else if (IsImagePartType(type)) {
      return InvalidArgument("messages[{}].content[{}]: an assistant message cannot hold an image", index, p);
    } else {
      return InvalidArgument("messages[{}].content: unsupported part type '{}'", index, type);
    }
  }
  return text;
}

std::string StringField(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A user, system or tool message: <|open|>message ATTRS<|sep|> content <|close|>message<|sep|><|end_of_msg|>,
// its text parts as one body and its image parts as image prompts where they stand.
Status RenderContentMessage(PromptBuilder& builder, const Attributes& attributes,
                            const nlohmann::json& message, size_t index, const RenderOptions& options) {
  const auto content = message.find("content");
  if (content == message.end() || !content->is_array()) {
    K3_ASSIGN_OR_RETURN(std::string text, ContentText(message, index));
    return builder.Message(attributes, text);
  }
  K3_RETURN_IF_ERROR(builder.OpenTag("message", attributes));
  for (size_t p = 0; p < content->size(); ++p) {
    const nlohmann::json& part = (*content)[p];
    const std::string type = PartType(part);
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) {
        return InvalidArgument("messages[{}].content: a text part needs a string 'text'", index);
      }
      builder.Text(part["text"].get<std::string>());
    } else if (IsImagePartType(type)) {
      const auto found =
          std::find_if(options.images.begin(), options.images.end(),
                       [&](const ImagePart& image) { return image.message == index && image.part == p; });
      if (found == options.images.end() || found->num_tokens < 1) {
        return InvalidArgument("messages[{}].content[{}]: an image part the image processor did not measure",
                               index, p);
      }
      K3_RETURN_IF_ERROR(builder.Image(*found));
    } else {
      return InvalidArgument("messages[{}].content: unsupported part type '{}'", index, type);
    }
  }
  K3_RETURN_IF_ERROR(builder.CloseTag("message"));
  return builder.Marker(kXtmlEndOfMsg);
}

bool IsBlank(std::string_view text) {
  return text.find_first_not_of(" \t\n\r\f\v") == std::string_view::npos;
}

const char* JsonTypeName(const nlohmann::ordered_json& value) {
  if (value.is_string()) return "string";
  if (value.is_number()) return "number";
  if (value.is_boolean()) return "boolean";
  if (value.is_null()) return "null";
  if (value.is_object()) return "object";
  return "array";
}

// One tool call: <|open|>call tool="NAME" index="n"<|sep|> arguments <|close|>call<|sep|>.
Status RenderToolCall(PromptBuilder& builder, const nlohmann::json& call, size_t number,
                      size_t message_index) {
  const nlohmann::json& function =
      call.contains("function") && call["function"].is_object() ? call["function"] : call;
  const std::string name = StringField(function, "name");
  if (name.empty())
    return InvalidArgument("messages[{}].tool_calls[{}] has no function name", message_index, number - 1);
  K3_RETURN_IF_ERROR(builder.OpenTag("call", {{"tool", name}, {"index", std::to_string(number)}}));
  const auto arguments_it = function.find("arguments");
  nlohmann::ordered_json arguments;
  std::string raw;
  bool parsed = true;
  if (arguments_it == function.end() || arguments_it->is_null()) {
    arguments = nlohmann::ordered_json::object();
  } else if (arguments_it->is_string()) {
    raw = arguments_it->get<std::string>();
    arguments = nlohmann::ordered_json::parse(raw, nullptr, /*allow_exceptions=*/false);
    parsed = !arguments.is_discarded() && arguments.is_object();
  } else {
    // Already an object (dict order as given by the request's JSON text is not kept by nlohmann::json).
    arguments = nlohmann::ordered_json::parse(arguments_it->dump());
    parsed = arguments.is_object();
    raw = arguments_it->dump();
  }
  if (!parsed) {
    K3_RETURN_IF_ERROR(builder.OpenTag("json", {{"type", "object"}}));
    builder.Text(raw);
    K3_RETURN_IF_ERROR(builder.CloseTag("json"));
  } else {
    for (const auto& [key, value] : arguments.items()) {
      K3_RETURN_IF_ERROR(builder.OpenTag("argument", {{"key", key}, {"type", JsonTypeName(value)}}));
      builder.Text(value.is_string() ? value.get<std::string>() : DumpPythonStyle(value));
      K3_RETURN_IF_ERROR(builder.CloseTag("argument"));
    }
  }
  return builder.CloseTag("call");
}

Attributes AssistantAttributes(const nlohmann::json& message) {
  Attributes attributes = {{"role", "assistant"}};
  if (const std::string name = StringField(message, "name"); !name.empty())
    attributes.emplace_back("name", name);
  return attributes;
}

std::string ReasoningText(const nlohmann::json& message) {
  std::string reasoning = StringField(message, "reasoning_content");
  if (reasoning.empty()) reasoning = StringField(message, "reasoning");
  return reasoning;
}

// continue_final_message: the final assistant message without its closing markers (see RenderOptions).
Result<OpenChannel> RenderOpenAssistant(PromptBuilder& builder, const nlohmann::json& message, size_t index,
                                        const RenderOptions& options) {
  const auto calls = message.find("tool_calls");
  if (calls != message.end() && !calls->is_null() && !(calls->is_array() && calls->empty())) {
    return InvalidArgument(
        "messages[{}]: continue_final_message cannot continue an assistant message with tool_calls", index);
  }
  K3_ASSIGN_OR_RETURN(std::string content, ContentText(message, index));
  K3_RETURN_IF_ERROR(builder.OpenTag("message", AssistantAttributes(message)));
  if (options.thinking) {
    const std::string reasoning = ReasoningText(message);
    K3_RETURN_IF_ERROR(builder.OpenTag("think"));
    if (content.empty() && !IsBlank(reasoning)) {
      builder.Text(reasoning);
      return OpenChannel::kThink;
    }
    if (!IsBlank(reasoning)) builder.Text(reasoning);
    K3_RETURN_IF_ERROR(builder.CloseTag("think"));
  }
  K3_RETURN_IF_ERROR(builder.OpenTag("response"));
  builder.Text(content);
  return OpenChannel::kResponse;
}

Status RenderAssistant(PromptBuilder& builder, const nlohmann::json& message, size_t index,
                       const RenderOptions& options) {
  K3_RETURN_IF_ERROR(builder.OpenTag("message", AssistantAttributes(message)));
  if (options.thinking) {
    const std::string reasoning = ReasoningText(message);
    K3_RETURN_IF_ERROR(builder.OpenTag("think"));
    if (!IsBlank(reasoning)) builder.Text(reasoning);
    K3_RETURN_IF_ERROR(builder.CloseTag("think"));
  }
  K3_ASSIGN_OR_RETURN(std::string content, ContentText(message, index));
  K3_RETURN_IF_ERROR(builder.OpenTag("response"));
  builder.Text(content);
  K3_RETURN_IF_ERROR(builder.CloseTag("response"));
  const auto calls = message.find("tool_calls");
  if (calls != message.end() && calls->is_array() && !calls->empty()) {
    K3_RETURN_IF_ERROR(builder.OpenTag("tools"));
    for (size_t i = 0; i < calls->size(); ++i) {
      if (!(*calls)[i].is_object())
        return InvalidArgument("messages[{}].tool_calls[{}] must be an object", index, i);
      K3_RETURN_IF_ERROR(RenderToolCall(builder, (*calls)[i], i + 1, index));
    }
    K3_RETURN_IF_ERROR(builder.CloseTag("tools"));
  } else if (calls != message.end() && !calls->is_null() && !calls->is_array()) {
    return InvalidArgument("messages[{}].tool_calls must be an array", index);
  }
  K3_RETURN_IF_ERROR(builder.CloseTag("message"));
  return builder.Marker(kXtmlEndOfMsg);
}

// Each run of tool messages follows the order of the preceding assistant's tool_calls when every message
// of the run names one of its call ids.
std::vector<size_t> MessageOrder(const nlohmann::json& messages) {
  std::vector<size_t> order;
  const nlohmann::json* last_assistant = nullptr;
  size_t i = 0;
  while (i < messages.size()) {
    const std::string role = StringField(messages[i], "role");
    if (role != "tool") {
      if (role == "assistant") last_assistant = &messages[i];
      order.push_back(i++);
      continue;
    }
    size_t end = i;
    while (end < messages.size() && StringField(messages[end], "role") == "tool") ++end;
    std::vector<std::pair<size_t, size_t>> keyed;  // (position of the call id, message index)
    bool all_match = last_assistant != nullptr && last_assistant->contains("tool_calls") &&
                     (*last_assistant)["tool_calls"].is_array();
    for (size_t m = i; m < end && all_match; ++m) {
      const std::string id = StringField(messages[m], "tool_call_id");
      const auto& calls = (*last_assistant)["tool_calls"];
      size_t position = calls.size();
      for (size_t c = 0; c < calls.size() && !id.empty(); ++c) {
        if (calls[c].is_object() && StringField(calls[c], "id") == id) {
          position = c;
          break;
        }
      }
      all_match = position < calls.size();
      keyed.emplace_back(position, m);
    }
    if (all_match) {
      std::stable_sort(keyed.begin(), keyed.end());
      for (const auto& entry : keyed) order.push_back(entry.second);
    } else {
      for (size_t m = i; m < end; ++m) order.push_back(m);
    }
    i = end;
  }
  return order;
}

std::string ToolNameFromCall(const nlohmann::json* assistant, size_t number) {
  if (assistant == nullptr || !assistant->contains("tool_calls") || !(*assistant)["tool_calls"].is_array())
    return "";
  const auto& calls = (*assistant)["tool_calls"];
  if (number == 0 || number > calls.size() || !calls[number - 1].is_object()) return "";
  const auto& call = calls[number - 1];
  const nlohmann::json& function =
      call.contains("function") && call["function"].is_object() ? call["function"] : call;
  return StringField(function, "name");
}

std::string ToolChoiceBody(const std::string& tool_choice) {
  if (tool_choice == "required") return "You must call at least one of the available tools in this response.";
  return "Do not call any tool in this response; answer directly.";
}

Result<std::string> ResponseFormatBody(const nlohmann::json& format) {
  const std::string type = format.is_object() ? StringField(format, "type") : std::string();
  if (type == "json_object") return std::string("Respond with one valid JSON object and nothing else.");
  if (type == "json_schema") {
    const auto spec = format.find("json_schema");
    if (spec == format.end() || !spec->is_object()) {
      return InvalidArgument("response_format json_schema needs a 'json_schema' object");
    }
    const nlohmann::json schema = spec->contains("schema") ? (*spec)["schema"] : nlohmann::json::object();
    return "Respond with one JSON value that conforms to this JSON schema and nothing else.\n\n```json\n" +
           DumpCompactSorted(schema) + "\n```";
  }
  return std::string();
}

}  // namespace

std::string ThinkingEffortBody(const std::string& effort) {
  return "`thinking_effort` guides on how much to think in your thinking channel (not including the response "
         "channel), supported values include `low`, `medium`, `high`, and `max`.\nNow the system is invoked "
         "with "
         "`thinking_effort=" +
         effort + "`.";
}

std::string ToolDeclarationBody(const nlohmann::json& tools) {
  return "# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n" +
         DumpCompactSorted(tools) + "\n```";
}

std::string DynamicToolDeclarationBody(const nlohmann::json& tools) {
  return "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\nYou have "
         "access to "
         "all existing and extended tools.\nHere are the specs for the extended tools.\n\n```json\n" +
         DumpCompactSorted(tools) + "\n```";
}

Result<RenderedPrompt> RenderXtml(const Tokenizer& tokenizer, const nlohmann::json& messages,
                                  const RenderOptions& options) {
  if (!messages.is_array()) return InvalidArgument("messages must be an array");
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].is_object() || !messages[i].contains("role") || !messages[i]["role"].is_string()) {
      return InvalidArgument("messages[{}] must be an object with a string 'role'", i);
    }
  }
  if (!options.tools.is_null() && !options.tools.is_array()) return InvalidArgument("tools must be an array");
  // continue_final_message: the final message is rendered last, left open.
  size_t open_message = messages.size();
  if (options.continue_final_message) {
    if (options.add_generation_prompt) {
      return InvalidArgument("Cannot set both continue_final_message and add_generation_prompt to true");
    }
    if (messages.empty() || messages.back()["role"] != "assistant") {
      return InvalidArgument("continue_final_message needs the final message to be an assistant message");
    }
    open_message = messages.size() - 1;
  }
  PromptBuilder builder(tokenizer);

  if (options.tools.is_array() && !options.tools.empty()) {
    K3_RETURN_IF_ERROR(
        builder.Message({{"role", "system"}, {"type", "tool-declare"}}, ToolDeclarationBody(options.tools)));
  }
  const std::string& effort = options.thinking_effort;
  if (options.thinking && (effort == "low" || effort == "medium" || effort == "high" || effort == "max")) {
    K3_RETURN_IF_ERROR(
        builder.Message({{"role", "system"}, {"type", "thinking-effort"}}, ThinkingEffortBody(effort)));
  }

  const nlohmann::json* last_assistant = nullptr;
  size_t tools_since_assistant = 0;
  for (size_t index : MessageOrder(messages)) {
    if (index == open_message) continue;
    const nlohmann::json& message = messages[index];
    const std::string role = message["role"].get<std::string>();
    const std::string name = StringField(message, "name");
    const bool declares_tools = message.contains("tools") && !message["tools"].is_null();
    if (role == "user" || (role == "system" && !declares_tools)) {
      Attributes attributes = {{"role", role}};
      if (!name.empty()) attributes.emplace_back("name", name);
      K3_RETURN_IF_ERROR(RenderContentMessage(builder, attributes, message, index, options));
    } else if (role == "system") {
      if (!message["tools"].is_array()) return InvalidArgument("messages[{}].tools must be an array", index);
      K3_RETURN_IF_ERROR(builder.Message({{"role", "system"}, {"type", "tool-declare"}},
                                         DynamicToolDeclarationBody(message["tools"])));
    } else if (role == "assistant") {
      K3_RETURN_IF_ERROR(RenderAssistant(builder, message, index, options));
      last_assistant = &message;
      tools_since_assistant = 0;
    } else if (role == "tool") {
      ++tools_since_assistant;
      std::string tool = StringField(message, "tool");
      if (tool.empty()) tool = name;
      if (tool.empty()) tool = ToolNameFromCall(last_assistant, tools_since_assistant);
      K3_RETURN_IF_ERROR(RenderContentMessage(
          builder, {{"role", "tool"}, {"tool", tool}, {"index", std::to_string(tools_since_assistant)}},
          message, index, options));
    }
    // Other roles are skipped, as in the reference.
  }

  if (options.tool_choice == "required" || options.tool_choice == "none") {
    K3_RETURN_IF_ERROR(
        builder.Message({{"role", "system"}, {"type", "tool-choice"}}, ToolChoiceBody(options.tool_choice)));
  }
  if (!options.response_format.is_null()) {
    K3_ASSIGN_OR_RETURN(std::string body, ResponseFormatBody(options.response_format));
    if (!body.empty()) {
      K3_RETURN_IF_ERROR(builder.Message({{"role", "system"}, {"type", "response-format"}}, body));
    }
  }
  OpenChannel open_channel = OpenChannel::kNone;
  if (open_message < messages.size()) {
    K3_ASSIGN_OR_RETURN(open_channel,
                        RenderOpenAssistant(builder, messages[open_message], open_message, options));
  } else if (options.add_generation_prompt) {
    K3_RETURN_IF_ERROR(builder.OpenTag("message", {{"role", "assistant"}}));
    K3_RETURN_IF_ERROR(builder.OpenTag(options.thinking ? "think" : "response"));
    open_channel = options.thinking ? OpenChannel::kThink : OpenChannel::kResponse;
  }
  return builder.Finish(open_channel);
}

}  // namespace k3::chat
