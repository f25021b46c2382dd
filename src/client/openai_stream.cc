// ParseJsonAnswer, ParseChatCompletion and ChatStreamAccumulator.
#include "src/client/openai_stream.h"

#include <algorithm>

#include <fmt/format.h>

namespace k3::client {
namespace {

using nlohmann::json;

constexpr size_t kMaxErrors = 20;

// Appends the reasoning text of a message or delta object; returns true when there was any.
bool TakeReasoning(const json& object, ChatResult& result) {
  for (const char* field : {"reasoning_content", "reasoning"}) {
    auto it = object.find(field);
    if (it == object.end() || !it->is_string()) continue;
    if (result.reasoning_field.empty()) result.reasoning_field = field;
    const std::string& text = it->get_ref<const std::string&>();
    result.reasoning += text;
    return !text.empty();
  }
  return false;
}

std::string StringOr(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string Snippet(std::string_view text, size_t max_chars) {
  std::string out;
  // Cut on a character boundary: never inside a UTF-8 sequence (continuation bytes are 10xxxxxx).
  size_t cut = std::min(max_chars, text.size());
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  for (char c : text.substr(0, cut)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

Result<json> ParseJsonAnswer(const HttpResponse& response, const std::string& what) {
  json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  const bool is_json = !body.is_discarded();
  if (response.status < 200 || response.status >= 300) {
    if (is_json && body.is_object() && body.contains("error")) {
      const json& error = body["error"];
      const std::string message = error.is_object() ? StringOr(error, "message") : error.dump();
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: HTTP {}: {}", what, response.status, Snippet(message, 300)));
    }
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: HTTP {}: '{}'", what, response.status, Snippet(response.body)));
  }
  if (!is_json) {
    return DataLoss(
        "{}: the answer is not JSON (HTTP {}, content-type '{}'): '{}' -- is this an "
        "OpenAI-compatible endpoint?",
        what, response.status, response.content_type, Snippet(response.body));
  }
  if (!body.is_object()) {
    return DataLoss("{}: expected a JSON object, got '{}'", what, Snippet(body.dump()));
  }
  return body;
}

Usage ParseUsage(const json& usage) {
  Usage out;
  if (!usage.is_object()) return out;
  out.prompt_tokens = usage.value("prompt_tokens", int64_t{-1});
  out.completion_tokens = usage.value("completion_tokens", int64_t{-1});
  auto details = usage.find("prompt_tokens_details");
  if (details != usage.end() && details->is_object()) {
    auto cached = details->find("cached_tokens");
    if (cached != details->end() && cached->is_number_integer()) out.cached_tokens = cached->get<int64_t>();
  }
  return out;
}

Result<ChatResult> ParseChatCompletion(const json& body) {
  auto choices = body.find("choices");
  if (choices == body.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) {
    return DataLoss("not a chat.completion: no choices[0] in '{}'", Snippet(body.dump()));
  }
  const json& choice = (*choices)[0];
  auto message = choice.find("message");
  if (message == choice.end() || !message->is_object()) {
    return DataLoss("not a chat.completion: choices[0] has no message object: '{}'", Snippet(choice.dump()));
  }
  ChatResult result;
  result.content = StringOr(*message, "content");
  TakeReasoning(*message, result);
  result.finish_reason = StringOr(choice, "finish_reason");
  auto calls = message->find("tool_calls");
  if (calls != message->end() && calls->is_array()) {
    for (const json& call : *calls) {
      if (!call.is_object()) continue;
      ToolCall tc;
      tc.id = StringOr(call, "id");
      auto function = call.find("function");
      if (function != call.end() && function->is_object()) {
        tc.name = StringOr(*function, "name");
        tc.arguments = StringOr(*function, "arguments");
      }
      result.tool_calls.push_back(std::move(tc));
    }
  }
  auto usage = body.find("usage");
  if (usage != body.end() && usage->is_object()) result.usage = ParseUsage(*usage);
  return result;
}

void ChatStreamAccumulator::AddError(std::string message) {
  if (errors_.size() < kMaxErrors) errors_.push_back(std::move(message));
}

bool ChatStreamAccumulator::OnEvent(std::string_view payload) {
  if (payload == "[DONE]") return false;
  ++chunks_;
  json chunk = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    AddError(fmt::format("chunk {}: data is not a JSON object: '{}'", chunks_, Snippet(payload)));
    return false;
  }
  if (auto error = chunk.find("error"); error != chunk.end()) {
    AddError(fmt::format("chunk {}: the server sent an error: {}", chunks_, Snippet(error->dump(), 300)));
    return false;
  }
  if (StringOr(chunk, "object") != "chat.completion.chunk") {
    AddError(fmt::format("chunk {}: object is '{}', expected 'chat.completion.chunk'", chunks_,
                         StringOr(chunk, "object")));
  }
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) {
    AddError(fmt::format("chunk {}: no choices array: '{}'", chunks_, Snippet(payload)));
    return false;
  }
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    result_.usage = ParseUsage(*usage);
    if (choices->empty()) usage_chunk_seen_ = true;
  }
  bool output = false;
  for (const json& choice : *choices) {
    if (!choice.is_object() || choice.value("index", 0) != 0) continue;
    if (std::string reason = StringOr(choice, "finish_reason"); !reason.empty())
      result_.finish_reason = reason;
    auto delta = choice.find("delta");
    if (delta == choice.end() || !delta->is_object()) {
      AddError(fmt::format("chunk {}: choice without a delta object", chunks_));
      continue;
    }
    if (auto content = delta->find("content"); content != delta->end() && content->is_string()) {
      const std::string& text = content->get_ref<const std::string&>();
      result_.content += text;
      output |= !text.empty();
    }
    output |= TakeReasoning(*delta, result_);
    auto calls = delta->find("tool_calls");
    if (calls == delta->end() || !calls->is_array()) continue;
    for (const json& call : *calls) {
      if (!call.is_object()) continue;
      const size_t index = call.value("index", size_t{0});
      if (index > 1024) {
        AddError(fmt::format("chunk {}: tool_calls index {} out of range", chunks_, index));
        continue;
      }
      if (result_.tool_calls.size() <= index) result_.tool_calls.resize(index + 1);
      ToolCall& tc = result_.tool_calls[index];
      if (std::string id = StringOr(call, "id"); !id.empty()) tc.id = id;
      auto function = call.find("function");
      if (function == call.end() || !function->is_object()) continue;
      tc.name += StringOr(*function, "name");
      const std::string arguments = StringOr(*function, "arguments");
      tc.arguments += arguments;
      output |= !arguments.empty() || function->contains("name");
    }
  }
  return output;
}

}  // namespace k3::client
