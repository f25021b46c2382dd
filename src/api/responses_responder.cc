// ResponsesResponder: engine events -> the Responses API's typed stream events or its response object
// (responses.h). The output parser (src/chat) splits the text into reasoning, content and tool calls; each
// becomes one output item, opened when its first text arrives and closed when the next item starts or the
// output ends. A response that ended normally is checked against what its text.format schema (or forced
// tool's parameters) left to the end (plan.chat.schema_check, as chat completions do): a violation makes it
// "incomplete" with incomplete_details {reason: "schema_violation", message}.
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/api/errors.h"
#include "src/api/json_dump.h"
#include "src/api/response_parts.h"
#include "src/api/responses.h"
#include "src/chat/stream_parser.h"

namespace k3::api {

using nlohmann::json;

struct ResponsesResponder::Impl {
  enum class Open { kNone, kReasoning, kMessage };

  Impl(const ResponsesPlan& plan, const ServerContext& ctx, std::string response_id, int64_t t)
      : model(plan.chat.model),
        stream(plan.stream),
        echo(plan.echo),
        reasoning_parser(ctx.reasoning_parser && plan.chat.parser.thinking && plan.chat.include_reasoning),
        reasoning_as_content(!ctx.reasoning_parser),
        parser(plan.chat.parser),
        schema_check(plan.chat.schema_check),
        id(std::move(response_id)),
        created(t) {}

  std::string model;
  bool stream;
  json echo;
  bool reasoning_parser;      // reasoning text becomes a reasoning item
  bool reasoning_as_content;  // no reasoning parser: the thinking text is message text
  chat::StreamParser parser;
  std::shared_ptr<const chat::OutputSchemaCheck> schema_check;
  std::string id;
  int64_t created;

  json output = json::array();  // finished items
  Open open = Open::kNone;
  std::string open_text;  // text of the open item so far
  std::string open_id;
  int64_t sequence = 0;
  size_t calls = 0;
  engine::Usage usage;
  int64_t reasoning_tokens = 0;
  bool answer_started = false;  // message text or a call has come
  engine::FinishReason finish = engine::FinishReason::kNone;
  std::string stop_reason;               // the engine's: a matched stop string or stop token id
  std::optional<std::string> violation;  // the end check's finding
  std::optional<ApiError> failure;
  std::vector<std::string> events;  // this OnEvent's stream events

  std::string ItemId(const char* prefix) const { return fmt::format("{}_{}_{}", prefix, id, output.size()); }

  void Emit(json event) {
    if (!stream) return;
    event["sequence_number"] = sequence++;
    events.push_back(DumpJson(event));
  }

  json ResponseObject(const char* status) const {
    json body = {{"id", id},
                 {"object", "response"},
                 {"created_at", created},
                 {"status", status},
                 {"error", nullptr},
                 {"incomplete_details", nullptr},
                 {"model", model},
                 {"output", output},
                 {"parallel_tool_calls", true},
                 {"tool_choice", "auto"},
                 {"tools", json::array()},
                 {"metadata", json::object()},
                 {"store", false},
                 {"truncation", "disabled"},
                 {"usage", nullptr}};
    for (const auto& [key, value] : echo.items()) body[key] = value;
    return body;
  }

  json ItemOf(Open kind, const std::string& text, const char* status) const {
    if (kind == Open::kReasoning) {
      return {{"type", "reasoning"},
              {"id", open_id},
              {"summary", json::array()},
              {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})},
              {"status", status}};
    }
    return {{"type", "message"},
            {"id", open_id},
            {"role", "assistant"},
            {"status", status},
            {"content",
             json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
  }

  void Close() {
    if (open == Open::kNone) return;
    const int64_t index = static_cast<int64_t>(output.size());
    if (open == Open::kReasoning) {
      Emit({{"type", "response.reasoning_text.done"},
            {"item_id", open_id},
            {"output_index", index},
            {"content_index", 0},
            {"text", open_text}});
    } else {
      Emit({{"type", "response.output_text.done"},
            {"item_id", open_id},
            {"output_index", index},
            {"content_index", 0},
            {"text", open_text}});
      Emit({{"type", "response.content_part.done"},
            {"item_id", open_id},
            {"output_index", index},
            {"content_index", 0},
            {"part", {{"type", "output_text"}, {"text", open_text}, {"annotations", json::array()}}}});
    }
    json item = ItemOf(open, open_text, "completed");
    Emit({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
    output.push_back(std::move(item));
    open = Open::kNone;
    open_text.clear();
  }

  void Append(Open kind, const std::string& text) {
    if (text.empty()) return;
    if (open != kind) {
      Close();
      open = kind;
      open_id = ItemId(kind == Open::kReasoning ? "rs" : "msg");
      const int64_t index = static_cast<int64_t>(output.size());
      Emit({{"type", "response.output_item.added"},
            {"output_index", index},
            {"item", ItemOf(kind, "", "in_progress")}});
      if (kind == Open::kMessage) {
        Emit({{"type", "response.content_part.added"},
              {"item_id", open_id},
              {"output_index", index},
              {"content_index", 0},
              {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
      }
    }
    open_text += text;
    Emit({{"type", kind == Open::kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta"},
          {"item_id", open_id},
          {"output_index", static_cast<int64_t>(output.size())},
          {"content_index", 0},
          {"delta", text}});
  }

  void AddCall(const chat::ParsedToolCall& call) {
    Close();
    const int64_t index = static_cast<int64_t>(output.size());
    const std::string item_id = ItemId("fc");
    json item = {{"type", "function_call"}, {"id", item_id},   {"call_id", ToolCallId(id, 0, calls++)},
                 {"name", call.name},       {"arguments", ""}, {"status", "in_progress"}};
    Emit({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
    Emit({{"type", "response.function_call_arguments.delta"},
          {"item_id", item_id},
          {"output_index", index},
          {"delta", call.arguments}});
    Emit({{"type", "response.function_call_arguments.done"},
          {"item_id", item_id},
          {"output_index", index},
          {"arguments", call.arguments}});
    item["arguments"] = call.arguments;
    item["status"] = "completed";
    Emit({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
    output.push_back(std::move(item));
  }

  void Apply(const chat::OutputDelta& delta) {
    if (reasoning_parser) {
      Append(Open::kReasoning, delta.reasoning);
    } else if (reasoning_as_content) {
      Append(Open::kMessage, delta.reasoning);
    }
    Append(Open::kMessage, delta.content);
    for (const chat::ParsedToolCall& call : delta.tool_calls) AddCall(call);
    if (!delta.content.empty() || !delta.tool_calls.empty()) answer_started = true;
  }

  json Usage() const {
    return {{"input_tokens", usage.prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", usage.cached_prompt_tokens}}},
            {"output_tokens", usage.completion_tokens},
            {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
  }

  const char* Status() const {
    if (failure) return "failed";
    return finish == engine::FinishReason::kLength || violation ? "incomplete" : "completed";
  }

  // The end check of a response that ended normally (not cut by a stop string or stop token id), over
  // the finished output items: the message text, or each function call's arguments.
  std::optional<std::string> EndCheck() const {
    if (schema_check == nullptr || finish != engine::FinishReason::kStop || !stop_reason.empty())
      return std::nullopt;
    std::string message_text;
    size_t call_index = 0;
    for (const json& item : output) {
      if (item["type"] == "message") message_text += item["content"][0]["text"].get<std::string>();
      if (item["type"] != "function_call") continue;
      if (auto found = schema_check->CheckToolCall(item["name"].get<std::string>(),
                                                   item["arguments"].get<std::string>(), call_index++)) {
        return found;
      }
    }
    if (call_index > 0) return std::nullopt;
    return schema_check->CheckJson(message_text);
  }

  json Final() const {
    json body = ResponseObject(Status());
    body["usage"] = Usage();
    if (finish == engine::FinishReason::kLength) {
      body["incomplete_details"] = {{"reason", "max_output_tokens"}};
    } else if (violation) {
      body["incomplete_details"] = {{"reason", "schema_violation"}, {"message", *violation}};
    }
    if (failure) body["error"] = {{"code", "server_error"}, {"message", failure->message}};
    return body;
  }

  std::vector<std::string> OnEvent(const engine::Event& event) {
    events.clear();
    if (event.choice != 0) return {};
    if (sequence == 0) {
      Emit({{"type", "response.created"}, {"response", ResponseObject("in_progress")}});
      Emit({{"type", "response.in_progress"}, {"response", ResponseObject("in_progress")}});
    }
    chat::OutputDelta delta = parser.Push(event.text);
    // Tokens generated before any message text or call count as reasoning tokens (thinking on).
    if (reasoning_parser && !answer_started) reasoning_tokens += static_cast<int64_t>(event.tokens.size());
    if (event.finish != engine::FinishReason::kNone) {
      chat::OutputDelta rest = parser.Finish();
      delta.reasoning += rest.reasoning;
      delta.content += rest.content;
      for (auto& call : rest.tool_calls) delta.tool_calls.push_back(std::move(call));
      finish = event.finish;
      stop_reason = event.stop_reason;
      if (event.finish == engine::FinishReason::kError && !failure)
        failure = EngineFailure(event.error, event.unavailable);
    }
    Apply(delta);
    if (event.request_done) {
      usage = event.usage;
      Close();
      if (!failure) violation = EndCheck();
      if (failure) {
        Emit({{"type", "response.failed"}, {"response", Final()}});
      } else {
        const bool incomplete = std::string_view(Status()) == "incomplete";
        Emit({{"type", incomplete ? "response.incomplete" : "response.completed"}, {"response", Final()}});
      }
    }
    return std::move(events);
  }
};

ResponsesResponder::ResponsesResponder(const ResponsesPlan& plan, const ServerContext& ctx, std::string id,
                                       int64_t created)
    : impl_(std::make_unique<Impl>(plan, ctx, std::move(id), created)) {}
ResponsesResponder::~ResponsesResponder() = default;
std::vector<std::string> ResponsesResponder::OnEvent(const engine::Event& event) {
  return impl_->OnEvent(event);
}
std::string ResponsesResponder::FinalBody() const { return DumpJson(impl_->Final()); }
const std::optional<ApiError>& ResponsesResponder::failure() const { return impl_->failure; }

}  // namespace k3::api
