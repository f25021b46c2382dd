// POST /v1/messages (and count_tokens): the request translated into the chat completion it means
// (anthropic.h), then validated by ParseChatCompletion; Anthropic-shaped error bodies.
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/api/anthropic.h"
#include "src/api/error_table.h"
#include "src/api/json_dump.h"
#include "src/api/json_fields.h"

namespace k3::api {
namespace {

using nlohmann::json;

// Where a chat message came from: its Anthropic path, and per chat content part the block's path.
struct MessageOrigin {
  std::string path;
  std::vector<std::string> parts;
};

class AnthropicTranslator {
 public:
  AnthropicTranslator(const json& request, bool count_only) : request_(request), count_only_(count_only) {}

  const std::vector<MessageOrigin>& origins() const { return origins_; }

  std::optional<json> Run(ApiError* error) {
    json chat = json::object();
    for (const char* key : {"model", "temperature", "top_p", "top_k", "chat_template_kwargs"}) {
      if (auto it = request_.find(key); it != request_.end()) chat[key] = *it;
    }
    if (!request_.contains("model") || request_["model"].is_null()) Fail("model", "required (a string)");
    if (!count_only_) {
      auto max_tokens = request_.find("max_tokens");
      if (max_tokens == request_.end() || max_tokens->is_null()) {
        Fail("max_tokens", "required (an integer >= 1)");
      } else {
        chat["max_tokens"] = *max_tokens;
      }
      if (auto it = request_.find("stream"); it != request_.end()) chat["stream"] = *it;
      if (auto it = request_.find("stop_sequences"); it != request_.end() && !it->is_null()) {
        if (!it->is_array()) Fail("stop_sequences", "expected an array of strings");
        chat["stop"] = *it;
      }
    }
    for (const char* key : {"mcp_servers", "container"}) {
      if (auto it = request_.find(key); it != request_.end() && !it->is_null() && !it->empty())
        Fail(key, "is not supported by this server");
    }
    Messages(&chat["messages"]);
    if (auto it = request_.find("tools"); it != request_.end() && !it->is_null()) Tools(*it, &chat["tools"]);
    if (auto it = request_.find("tool_choice"); it != request_.end() && !it->is_null())
      ToolChoice(*it, &chat);
    if (auto it = request_.find("thinking"); it != request_.end() && !it->is_null()) Thinking(*it, &chat);
    if (auto it = request_.find("output_config"); it != request_.end() && !it->is_null())
      OutputConfig(*it, &chat);
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

  static std::string TypeOf(const json& block) {
    if (!block.is_object()) return "";
    auto it = block.find("type");
    return it != block.end() && it->is_string() ? it->get<std::string>() : "";
  }

  // An image block -> a chat image_url part (base64 sources become data: URLs).
  std::optional<json> ImagePart(const json& block, const std::string& path) {
    auto source = block.find("source");
    if (source == block.end() || !source->is_object()) {
      Fail(path + ".source", "required (an object {type: base64 | url, ...})");
      return std::nullopt;
    }
    const std::string type = TypeOf(*source);
    std::string url;
    if (type == "base64") {
      auto media_type = source->find("media_type");
      auto data = source->find("data");
      if (media_type == source->end() || !media_type->is_string()) {
        Fail(path + ".source.media_type", "required (a string such as \"image/png\")");
        return std::nullopt;
      }
      if (data == source->end() || !data->is_string()) {
        Fail(path + ".source.data", "required (base64 text)");
        return std::nullopt;
      }
      url = "data:" + media_type->get<std::string>() + ";base64," + data->get<std::string>();
    } else if (type == "url") {
      auto it = source->find("url");
      if (it == source->end() || !it->is_string()) {
        Fail(path + ".source.url", "required (a string)");
        return std::nullopt;
      }
      url = it->get<std::string>();
    } else {
      Fail(path + ".source.type",
           fmt::format("'{}' is not supported (base64, url)", type.empty() ? "(missing)" : type));
      return std::nullopt;
    }
    return json{{"type", "image_url"}, {"image_url", {{"url", std::move(url)}}}};
  }

  std::optional<std::string> Text(const json& block, const std::string& path) {
    auto it = block.find("text");
    if (it == block.end() || !it->is_string()) {
      Fail(path + ".text", "required (a string)");
      return std::nullopt;
    }
    return it->get<std::string>();
  }

  // A system value (a string or text blocks) appended to *text. Text blocks that carry Claude Code's
  // per-request "x-anthropic-billing-header" are skipped (they would defeat prefix caching), as vLLM does.
  void SystemText(const json& system, const std::string& path, std::string* text) {
    if (system.is_string()) {
      *text += system.get<std::string>();
      return;
    }
    if (!system.is_array())
      return Fail(path,
                  std::string("expected a string or an array of text blocks, got ") + JsonTypeName(system));
    for (size_t i = 0; i < system.size(); ++i) {
      const std::string block_path = fmt::format("{}[{}]", path, i);
      if (TypeOf(system[i]) != "text") return Fail(block_path + ".type", "expected \"text\"");
      auto piece = Text(system[i], block_path);
      if (!piece) return;
      if (piece->rfind("x-anthropic-billing-header", 0) == 0) continue;
      *text += *piece;
    }
  }

  // system, and the text of messages with role "system" (vLLM accepts those), as one system message
  // first, joined without a separator (as vLLM joins them).
  void System(json* messages) {
    std::string text;
    if (auto system = request_.find("system"); system != request_.end() && !system->is_null())
      SystemText(*system, "system", &text);
    if (auto input = request_.find("messages"); input != request_.end() && input->is_array()) {
      for (size_t i = 0; i < input->size() && error_.message.empty(); ++i) {
        const json& message = (*input)[i];
        if (!message.is_object() || message.value("role", json()) != "system") continue;
        auto content = message.find("content");
        if (content == message.end() || content->is_null())
          return Fail(fmt::format("messages[{}].content", i), "required");
        SystemText(*content, fmt::format("messages[{}].content", i), &text);
      }
    }
    if (text.empty() || !error_.message.empty()) return;
    messages->push_back({{"role", "system"}, {"content", std::move(text)}});
    origins_.push_back({"system", {}});
  }

  // A tool_result block -> a tool message (text joined by newlines; with images, text and image parts).
  void ToolResult(const json& block, const std::string& path, json* messages) {
    auto id = block.find("tool_use_id");
    if (id == block.end() || !id->is_string()) return Fail(path + ".tool_use_id", "required (a string)");
    json content = "";
    MessageOrigin origin{path + ".content", {}};
    if (auto it = block.find("content"); it != block.end() && !it->is_null()) {
      if (it->is_string()) {
        content = *it;
      } else if (it->is_array()) {
        json parts = json::array();
        std::string text;
        bool images = false;
        for (size_t j = 0; j < it->size(); ++j) {
          const json& item = (*it)[j];
          const std::string item_path = fmt::format("{}.content[{}]", path, j);
          const std::string type = TypeOf(item);
          if (type == "text") {
            auto piece = Text(item, item_path);
            if (!piece) return;
            if (!text.empty()) text += "\n";
            text += *piece;
            parts.push_back({{"type", "text"}, {"text", *piece}});
          } else if (type == "image") {
            auto part = ImagePart(item, item_path);
            if (!part) return;
            parts.push_back(std::move(*part));
            images = true;
          } else {
            return Fail(item_path + ".type",
                        fmt::format("'{}' is not supported in a tool_result (text, image)",
                                    type.empty() ? "(missing)" : type));
          }
          origin.parts.push_back(item_path);
        }
        if (images) {
          content = std::move(parts);
        } else {
          content = std::move(text);
          origin.parts.clear();
        }
      } else {
        return Fail(path + ".content", "expected a string or an array of blocks");
      }
    }
    messages->push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", std::move(content)}});
    origins_.push_back(std::move(origin));
  }

  void Message(const json& message, const std::string& path, json* messages) {
    if (!message.is_object())
      return Fail(path, std::string("expected an object, got ") + JsonTypeName(message));
    auto role_it = message.find("role");
    const std::string role =
        role_it != message.end() && role_it->is_string() ? role_it->get<std::string>() : "";
    if (role == "system") return;  // joined into the system message (System)
    if (role != "user" && role != "assistant")
      return Fail(path + ".role", "expected \"user\" or \"assistant\" (or \"system\")");
    auto content = message.find("content");
    if (content == message.end() || content->is_null()) return Fail(path + ".content", "required");
    if (content->is_string()) {
      messages->push_back({{"role", role}, {"content", *content}});
      origins_.push_back({path + ".content", {}});
      return;
    }
    if (!content->is_array())
      return Fail(path + ".content", std::string("expected a string or an array of content blocks, got ") +
                                         JsonTypeName(*content));
    json parts = json::array();
    MessageOrigin origin{path + ".content", {}};
    json tool_calls = json::array();
    std::string reasoning;
    bool images = false;
    bool has_text = false;
    for (size_t j = 0; j < content->size(); ++j) {
      const json& block = (*content)[j];
      const std::string block_path = fmt::format("{}.content[{}]", path, j);
      const std::string type = TypeOf(block);
      if (type == "text") {
        auto text = Text(block, block_path);
        if (!text) return;
        parts.push_back({{"type", "text"}, {"text", *text}});
        origin.parts.push_back(block_path);
        has_text = true;
      } else if (type == "image" && role == "user") {
        auto part = ImagePart(block, block_path);
        if (!part) return;
        parts.push_back(std::move(*part));
        origin.parts.push_back(block_path);
        images = true;
      } else if (type == "tool_result" && role == "user") {
        ToolResult(block, block_path, messages);
        if (!error_.message.empty()) return;
      } else if (type == "tool_use" && role == "assistant") {
        auto id = block.find("id");
        auto name = block.find("name");
        if (id == block.end() || !id->is_string()) return Fail(block_path + ".id", "required (a string)");
        if (name == block.end() || !name->is_string())
          return Fail(block_path + ".name", "required (a string)");
        json input = block.value("input", json::object());
        if (!input.is_object()) return Fail(block_path + ".input", "expected an object");
        tool_calls.push_back({{"id", *id},
                              {"type", "function"},
                              {"function", {{"name", *name}, {"arguments", DumpJson(input)}}}});
      } else if (type == "thinking" && role == "assistant") {
        auto it = block.find("thinking");
        if (it == block.end() || !it->is_string())
          return Fail(block_path + ".thinking", "required (a string)");
        reasoning += it->get<std::string>();
      } else if (type == "redacted_thinking" && role == "assistant") {
        continue;  // opaque: nothing the model can read
      } else {
        return Fail(block_path + ".type",
                    fmt::format("'{}' is not supported in a{} message ({})",
                                type.empty() ? "(missing)" : type, role == "user" ? " user" : "n assistant",
                                role == "user" ? "text, image, tool_result"
                                               : "text, tool_use, thinking, redacted_thinking"));
      }
    }
    if (parts.empty() && tool_calls.empty() && reasoning.empty()) return;  // only tool results
    json chat_message = {{"role", role}};
    if (images) {
      chat_message["content"] = std::move(parts);
      origins_.push_back(std::move(origin));
    } else {
      std::string text;
      for (const json& part : parts) text += part["text"].get<std::string>();
      if (has_text || role == "user") {
        chat_message["content"] = std::move(text);
      } else {
        chat_message["content"] = nullptr;
      }
      origins_.push_back({path + ".content", {}});
    }
    if (!tool_calls.empty()) chat_message["tool_calls"] = std::move(tool_calls);
    if (!reasoning.empty()) chat_message["reasoning_content"] = std::move(reasoning);
    messages->push_back(std::move(chat_message));
  }

  void Messages(json* messages) {
    *messages = json::array();
    System(messages);
    auto input = request_.find("messages");
    if (input == request_.end() || !input->is_array() || input->empty())
      return Fail("messages", "required: a non-empty array of messages");
    for (size_t i = 0; i < input->size() && error_.message.empty(); ++i)
      Message((*input)[i], fmt::format("messages[{}]", i), messages);
  }

  void Tools(const json& tools, json* out) {
    if (!tools.is_array()) return Fail("tools", "expected an array");
    *out = json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
      const json& tool = tools[i];
      const std::string path = fmt::format("tools[{}]", i);
      if (!tool.is_object()) return Fail(path, "expected an object");
      const std::string type = TypeOf(tool);
      if (!type.empty() && type != "custom") {
        return Fail(
            path + ".type",
            fmt::format("'{}' is not supported: this server runs no server tools (custom tools only)", type));
      }
      auto name = tool.find("name");
      if (name == tool.end() || !name->is_string()) return Fail(path + ".name", "required (a string)");
      auto schema = tool.find("input_schema");
      if (schema == tool.end() || !schema->is_object())
        return Fail(path + ".input_schema", "required (a JSON schema object)");
      json parameters = *schema;
      if (!parameters.contains("type")) parameters["type"] = "object";  // as vLLM defaults it
      json function = {{"name", *name}, {"parameters", std::move(parameters)}};
      if (auto it = tool.find("description"); it != tool.end() && !it->is_null())
        function["description"] = *it;
      out->push_back({{"type", "function"}, {"function", std::move(function)}});
    }
  }

  void ToolChoice(const json& choice, json* chat) {
    if (!choice.is_object())
      return Fail("tool_choice", "expected an object {type: auto | any | tool | none}");
    const std::string type = TypeOf(choice);
    if (type == "auto") {
      (*chat)["tool_choice"] = "auto";
    } else if (type == "any") {
      (*chat)["tool_choice"] = "required";
    } else if (type == "none") {
      (*chat)["tool_choice"] = "none";
    } else if (type == "tool") {
      auto name = choice.find("name");
      if (name == choice.end() || !name->is_string()) return Fail("tool_choice.name", "required (a string)");
      (*chat)["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
    } else {
      return Fail("tool_choice.type", "expected auto, any, tool or none");
    }
    if (auto it = choice.find("disable_parallel_tool_use"); it != choice.end() && !it->is_null()) {
      if (!it->is_boolean()) return Fail("tool_choice.disable_parallel_tool_use", "expected a boolean");
      (*chat)["parallel_tool_calls"] = !it->get<bool>();
    }
  }

  void Thinking(const json& thinking, json* chat) {
    const std::string type = TypeOf(thinking);
    if (type == "enabled" || type == "adaptive") {
      (*chat)["thinking"] = {{"type", "enabled"}};
    } else if (type == "disabled") {
      (*chat)["thinking"] = {{"type", "disabled"}};
    } else {
      Fail("thinking.type", "expected enabled, adaptive or disabled");
    }
  }

  void OutputConfig(const json& config, json* chat) {
    if (!config.is_object()) return Fail("output_config", "expected an object");
    if (auto it = config.find("effort"); it != config.end() && !it->is_null())
      (*chat)["reasoning_effort"] = *it;
    auto format = config.find("format");
    if (format == config.end() || format->is_null()) return;
    if (TypeOf(*format) != "json_schema")
      return Fail("output_config.format.type", "expected \"json_schema\"");
    auto schema = format->find("schema");
    if (schema == format->end() || !schema->is_object())
      return Fail("output_config.format.schema", "required (a JSON schema object)");
    (*chat)["response_format"] = {{"type", "json_schema"},
                                  {"json_schema", {{"name", "output"}, {"schema", *schema}}}};
  }

  const json& request_;
  bool count_only_;
  ApiError error_;
  std::vector<MessageOrigin> origins_;
};

// A chat error naming "messages[k]..." names the Anthropic field it came from instead.
void RenameAnthropicPath(const std::vector<MessageOrigin>& origins, ApiError* error) {
  if (error->param.rfind("messages[", 0) != 0) return;
  const size_t close = error->param.find(']');
  if (close == std::string::npos) return;
  const size_t k = static_cast<size_t>(std::strtoul(error->param.c_str() + 9, nullptr, 10));
  if (k >= origins.size()) return;
  const MessageOrigin& origin = origins[k];
  std::string rest = error->param.substr(close + 1);  // ".content[1].image_url"
  std::string renamed = origin.path;
  const std::string content = ".content";
  if (rest.rfind(content, 0) == 0) {
    rest = rest.substr(content.size());
    if (rest.rfind('[', 0) == 0 && !origin.parts.empty()) {
      const size_t part_close = rest.find(']');
      const size_t j = static_cast<size_t>(std::strtoul(rest.c_str() + 1, nullptr, 10));
      if (part_close != std::string::npos && j < origin.parts.size()) {
        renamed = origin.parts[j];
        rest = rest.substr(part_close + 1);
        if (rest.rfind(".image_url", 0) == 0) rest = ".source" + rest.substr(10);
      }
    }
  }
  renamed += rest;
  if (error->message.rfind(error->param, 0) == 0)
    error->message = renamed + error->message.substr(error->param.size());
  error->param = renamed;
}

std::optional<ChatPlan> Translate(std::string_view body, const ServerContext& ctx, bool count_only,
                                  ApiError* error) {
  std::optional<json> request = ParseRequestBody(body, error);
  if (!request) return std::nullopt;
  AnthropicTranslator translator(*request, count_only);
  std::optional<json> chat = translator.Run(error);
  if (!chat) return std::nullopt;
  auto plan = ParseChatCompletion(chat->dump(), ctx, error);
  if (!plan) RenameAnthropicPath(translator.origins(), error);
  return plan;
}

}  // namespace

std::optional<AnthropicPlan> ParseAnthropicMessages(std::string_view body, const ServerContext& ctx,
                                                    ApiError* error) {
  auto chat = Translate(body, ctx, /*count_only=*/false, error);
  if (!chat) return std::nullopt;
  AnthropicPlan plan;
  plan.stream = chat->stream;
  plan.chat = std::move(*chat);
  return plan;
}

std::optional<std::string> AnthropicCountTokens(std::string_view body, const ServerContext& ctx,
                                                ApiError* error) {
  auto chat = Translate(body, ctx, /*count_only=*/true, error);
  if (!chat) return std::nullopt;
  return DumpJson(json{{"input_tokens", chat->prompt_tokens}});
}

std::string AnthropicErrorBody(int http_status, std::string_view message) {
  return DumpJson(json{{"type", "error"},
                       {"error",
                        {{"type", std::string(ErrorKindFor(http_status).anthropic_type)},
                         {"message", std::string(message)}}}});
}

std::string AnthropicErrorBody(const ApiError& error) {
  return AnthropicErrorBody(error.http_status, error.message);
}

}  // namespace k3::api
