// POST /v1/responses: the request translated into the chat completion it means (responses.h), then
// validated by ParseChatCompletion.
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/api/json_fields.h"
#include "src/api/responses.h"

namespace k3::api {
namespace {

using nlohmann::json;

// Chat fields a Responses request may carry under the same name and meaning.
constexpr const char* kSameFields[] = {"model",
                                       "temperature",
                                       "top_p",
                                       "top_k",
                                       "min_p",
                                       "seed",
                                       "parallel_tool_calls",
                                       "stream",
                                       "presence_penalty",
                                       "frequency_penalty",
                                       "repetition_penalty",
                                       "chat_template_kwargs",
                                       "skip_special_tokens",
                                       "include_reasoning"};

class Translator {
 public:
  explicit Translator(const json& request) : request_(request) {}

  // Where chat message k's content came from ("input[3].content"), for error paths.
  const std::vector<std::string>& content_paths() const { return content_paths_; }

  // The chat body, or nullopt with *error set.
  std::optional<json> Run(ApiError* error) {
    json chat = json::object();
    for (const char* key : kSameFields) {
      if (auto it = request_.find(key); it != request_.end()) chat[key] = *it;
    }
    Refuse("previous_response_id", "is not supported: responses are not stored; send the whole conversation");
    if (auto it = request_.find("background"); it != request_.end() && *it == true)
      Fail("background", "is not supported: responses run in the foreground");
    if (auto it = request_.find("truncation"); it != request_.end() && !it->is_null() && *it != "disabled")
      Fail("truncation", "only \"disabled\" is supported (an input over the context is a 400)");
    if (auto it = request_.find("max_output_tokens"); it != request_.end()) chat["max_tokens"] = *it;
    Messages(&chat["messages"]);
    if (auto it = request_.find("tools"); it != request_.end() && !it->is_null()) Tools(*it, &chat["tools"]);
    if (auto it = request_.find("tool_choice"); it != request_.end() && !it->is_null())
      chat["tool_choice"] = ToolChoice(*it);
    if (auto it = request_.find("reasoning"); it != request_.end() && it->is_object()) {
      if (auto effort = it->find("effort"); effort != it->end() && *effort == "none")
        chat["chat_template_kwargs"]["thinking"] = false;
    }
    if (auto it = request_.find("text"); it != request_.end() && it->is_object()) {
      if (auto format = it->find("format"); format != it->end() && !format->is_null()) {
        auto response_format = ResponseFormat(*format);
        if (response_format) chat["response_format"] = std::move(*response_format);
      }
    }
    if (!error_.message.empty()) {
      *error = error_;
      return std::nullopt;
    }
    return chat;
  }

 private:
  void Fail(const std::string& path, const std::string& message) {
    if (error_.message.empty()) error_ = FieldError(path, message);
  }
  void Refuse(const char* key, const std::string& message) {
    if (auto it = request_.find(key); it != request_.end() && !it->is_null()) Fail(key, message);
  }

  // A content value as chat content: a string, the text of input_text / output_text parts, or (when it
  // holds input_image parts) an array of text and image_url parts in the same order, so part j of the chat
  // message is part j here.
  std::optional<json> Content(const json& content, const std::string& path) {
    if (content.is_string()) return content;
    if (!content.is_array()) {
      Fail(path, std::string("expected a string or an array of content parts, got ") + JsonTypeName(content));
      return std::nullopt;
    }
    std::string text;
    json parts = json::array();
    bool images = false;
    for (size_t i = 0; i < content.size(); ++i) {
      const json& part = content[i];
      const std::string part_path = fmt::format("{}[{}]", path, i);
      const std::string type = part.is_object() ? part.value("type", "") : "";
      if (type == "input_text" || type == "output_text" || type == "text") {
        auto it = part.find("text");
        if (it == part.end() || !it->is_string()) {
          Fail(part_path + ".text", "expected a string");
          return std::nullopt;
        }
        text += it->get<std::string>();
        parts.push_back({{"type", "text"}, {"text", *it}});
      } else if (type == "input_image") {
        if (part.contains("file_id")) {
          Fail(part_path + ".file_id", "is not supported (files are not stored): send image_url");
          return std::nullopt;
        }
        images = true;
        parts.push_back({{"type", "input_image"}, {"image_url", part.value("image_url", json())}});
      } else {
        Fail(part_path + ".type", fmt::format("'{}' is not supported (input_text, output_text, input_image)",
                                              type.empty() ? std::string("(missing)") : type));
        return std::nullopt;
      }
    }
    if (images) return parts;
    return json(text);
  }

  void Messages(json* messages) {
    *messages = json::array();
    if (auto it = request_.find("instructions"); it != request_.end() && !it->is_null()) {
      if (!it->is_string()) return Fail("instructions", "expected a string");
      messages->push_back({{"role", "system"}, {"content", *it}});
      content_paths_.push_back("instructions");
    }
    auto input = request_.find("input");
    if (input == request_.end() || input->is_null())
      return Fail("input", "required (a string or an array of items)");
    if (input->is_string()) {
      messages->push_back({{"role", "user"}, {"content", *input}});
      content_paths_.push_back("input");
      return;
    }
    if (!input->is_array())
      return Fail("input",
                  std::string("expected a string or an array of items, got ") + JsonTypeName(*input));
    for (size_t i = 0; i < input->size(); ++i) {
      const json& item = (*input)[i];
      const std::string path = fmt::format("input[{}]", i);
      if (!item.is_object()) return Fail(path, std::string("expected an object, got ") + JsonTypeName(item));
      const std::string type = item.value("type", item.contains("role") ? "message" : "");
      if (type == "message") {
        std::string role = item.value("role", "");
        if (role == "developer") role = "system";
        if (role != "user" && role != "system" && role != "assistant")
          return Fail(path + ".role", "expected user, system, developer or assistant");
        auto content = item.find("content");
        if (content == item.end()) return Fail(path + ".content", "required");
        auto chat_content = Content(*content, path + ".content");
        if (!chat_content) return;
        if (role == "assistant" && chat_content->is_array())
          return Fail(path + ".content", "an assistant message cannot hold an image");
        messages->push_back({{"role", role}, {"content", std::move(*chat_content)}});
        content_paths_.push_back(path + ".content");
      } else if (type == "function_call") {
        json call = {
            {"id", item.value("call_id", item.value("id", ""))},
            {"type", "function"},
            {"function", {{"name", item.value("name", "")}, {"arguments", item.value("arguments", "{}")}}}};
        // Consecutive calls belong to one assistant turn.
        if (!messages->empty() && messages->back()["role"] == "assistant" &&
            messages->back().contains("tool_calls")) {
          messages->back()["tool_calls"].push_back(std::move(call));
        } else {
          messages->push_back(
              {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
          content_paths_.push_back(path);
        }
      } else if (type == "function_call_output") {
        auto output = item.find("output");
        if (output == item.end()) return Fail(path + ".output", "required");
        auto chat_content = Content(*output, path + ".output");
        if (!chat_content) return;
        messages->push_back({{"role", "tool"},
                             {"tool_call_id", item.value("call_id", "")},
                             {"content", std::move(*chat_content)}});
        content_paths_.push_back(path + ".output");
      } else if (type == "reasoning") {
        continue;  // earlier reasoning is not sent back to the model (the chat template drops it too)
      } else {
        return Fail(path + ".type", fmt::format("'{}' is not supported (message, function_call, "
                                                "function_call_output, reasoning)",
                                                type.empty() ? std::string("(missing)") : type));
      }
    }
  }

  void Tools(const json& tools, json* out) {
    if (!tools.is_array()) return Fail("tools", "expected an array");
    *out = json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
      const json& tool = tools[i];
      const std::string path = fmt::format("tools[{}]", i);
      const std::string type = tool.is_object() ? tool.value("type", "") : "";
      if (type != "function") {
        return Fail(path + ".type", fmt::format("'{}' is not supported: function tools only", type));
      }
      json function = {{"name", tool.value("name", "")}};
      if (auto it = tool.find("description"); it != tool.end()) function["description"] = *it;
      if (auto it = tool.find("parameters"); it != tool.end()) function["parameters"] = *it;
      out->push_back({{"type", "function"}, {"function", std::move(function)}});
    }
  }

  json ToolChoice(const json& choice) {
    if (choice.is_object() && choice.value("type", "") == "function")
      return {{"type", "function"}, {"function", {{"name", choice.value("name", "")}}}};
    return choice;  // "auto", "none", "required" (chat checks the rest)
  }

  std::optional<json> ResponseFormat(const json& format) {
    const std::string type = format.is_object() ? format.value("type", "") : "";
    if (type == "text") return std::nullopt;
    if (type == "json_object") return json{{"type", "json_object"}};
    if (type == "json_schema") {
      json schema = {{"name", format.value("name", "response")}};
      if (auto it = format.find("schema"); it != format.end()) schema["schema"] = *it;
      if (auto it = format.find("strict"); it != format.end()) schema["strict"] = *it;
      return json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
    }
    Fail("text.format.type", "expected text, json_object or json_schema");
    return std::nullopt;
  }

  const json& request_;
  ApiError error_;
  std::vector<std::string> content_paths_;
};

// A chat error naming "messages[k].content..." names the Responses input it came from instead.
void RenameChatPath(const std::vector<std::string>& content_paths, ApiError* error) {
  if (error->param.rfind("messages[", 0) != 0) return;
  const size_t close = error->param.find(']');
  const size_t k = static_cast<size_t>(std::strtoul(error->param.c_str() + 9, nullptr, 10));
  const std::string chat_prefix = error->param.substr(0, close + 1) + ".content";
  if (k >= content_paths.size() || error->param.rfind(chat_prefix, 0) != 0) return;
  const std::string renamed = content_paths[k] + error->param.substr(chat_prefix.size());
  if (error->message.rfind(error->param, 0) == 0)
    error->message = renamed + error->message.substr(error->param.size());
  error->param = renamed;
}

}  // namespace

std::optional<ResponsesPlan> ParseResponses(std::string_view body, const ServerContext& ctx,
                                            ApiError* error) {
  std::optional<json> request = ParseRequestBody(body, error);
  if (!request) return std::nullopt;
  Translator translator(*request);
  std::optional<json> chat = translator.Run(error);
  if (!chat) return std::nullopt;
  auto plan = ParseChatCompletion(chat->dump(), ctx, error);
  if (!plan) {
    RenameChatPath(translator.content_paths(), error);
    return std::nullopt;
  }
  ResponsesPlan out;
  out.stream = plan->stream;
  out.chat = std::move(*plan);
  out.echo = json::object();
  for (const char* key : {"instructions", "max_output_tokens", "temperature", "top_p", "tools", "tool_choice",
                          "parallel_tool_calls", "metadata", "user", "reasoning", "text"}) {
    if (auto it = request->find(key); it != request->end()) out.echo[key] = *it;
  }
  return out;
}

}  // namespace k3::api
