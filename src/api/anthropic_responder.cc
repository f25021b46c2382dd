// AnthropicResponder: engine events -> the Messages API's stream events or its message object
// (anthropic.h). The output parser (src/chat) splits the text into reasoning, content and tool calls; each
// becomes one content block (thinking, text, tool_use), opened when its first text arrives and closed when
// the next block starts or the output ends.
#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/api/anthropic.h"
#include "src/api/errors.h"
#include "src/api/json_dump.h"
#include "src/api/response_parts.h"
#include "src/chat/stream_parser.h"

namespace k3::api {

using nlohmann::json;

struct AnthropicResponder::Impl {
  enum class Open { kNone, kThinking, kText };

  Impl(const AnthropicPlan& plan, const ServerContext& ctx, std::string message_id)
      : model(plan.chat.model),
        stream(plan.stream),
        reasoning_parser(ctx.reasoning_parser && plan.chat.parser.thinking && plan.chat.include_reasoning),
        reasoning_as_content(!ctx.reasoning_parser),
        parser(plan.chat.parser),
        stop(plan.chat.stop),
        prompt_tokens(plan.chat.prompt_tokens),
        id(std::move(message_id)) {}

  std::string model;
  bool stream;
  bool reasoning_parser;      // reasoning text becomes a thinking block
  bool reasoning_as_content;  // no reasoning parser: the thinking text is message text
  chat::StreamParser parser;
  std::vector<std::string> stop;
  int64_t prompt_tokens;
  std::string id;

  json content = json::array();  // finished blocks
  Open open = Open::kNone;
  std::string open_text;
  bool started = false;
  size_t calls = 0;
  engine::Usage usage;
  engine::FinishReason finish = engine::FinishReason::kNone;
  std::string stop_reason;  // the engine's: a matched stop string or stop token id
  std::optional<ApiError> failure;
  std::vector<std::string> events;  // this OnEvent's stream events

  void Emit(const char* name, const json& event) {
    if (!stream) return;
    events.push_back(fmt::format("event: {}\n{}", name, DumpJson(event)));
  }

  int64_t Index() const { return static_cast<int64_t>(content.size()); }

  // A stable stand-in for Anthropic's signature (thinking here is not signed): derived from the ids.
  std::string Signature() const { return ToolCallId(id, 1, content.size()).substr(5); }

  json Usage(bool final) const {
    return {{"input_tokens", final ? usage.prompt_tokens : prompt_tokens},
            {"output_tokens", final ? usage.completion_tokens : 0},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", final ? usage.cached_prompt_tokens : 0}};
  }

  json MessageObject(bool final) const {
    json body = {{"id", id},
                 {"type", "message"},
                 {"role", "assistant"},
                 {"model", model},
                 {"content", final ? content : json::array()},
                 {"stop_reason", nullptr},
                 {"stop_sequence", nullptr},
                 {"usage", Usage(final)}};
    if (final) {
      auto [reason, sequence] = StopReason();
      body["stop_reason"] = reason;
      body["stop_sequence"] = sequence;
    }
    return body;
  }

  // (stop_reason, stop_sequence): tool_use after calls, stop_sequence when a stop string matched,
  // max_tokens when cut by the limit, else end_turn.
  std::pair<json, json> StopReason() const {
    if (finish == engine::FinishReason::kLength) return {"max_tokens", nullptr};
    if (calls > 0) return {"tool_use", nullptr};
    if (!stop_reason.empty() && std::find(stop.begin(), stop.end(), stop_reason) != stop.end())
      return {"stop_sequence", stop_reason};
    return {"end_turn", nullptr};
  }

  void Close() {
    if (open == Open::kNone) return;
    json block;
    if (open == Open::kThinking) {
      const std::string signature = Signature();
      Emit("content_block_delta", {{"type", "content_block_delta"},
                                   {"index", Index()},
                                   {"delta", {{"type", "signature_delta"}, {"signature", signature}}}});
      block = {{"type", "thinking"}, {"thinking", open_text}, {"signature", signature}};
    } else {
      block = {{"type", "text"}, {"text", open_text}};
    }
    Emit("content_block_stop", {{"type", "content_block_stop"}, {"index", Index()}});
    content.push_back(std::move(block));
    open = Open::kNone;
    open_text.clear();
  }

  void Append(Open kind, const std::string& text) {
    if (text.empty()) return;
    if (open != kind) {
      Close();
      open = kind;
      json start = kind == Open::kThinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                           : json{{"type", "text"}, {"text", ""}};
      Emit("content_block_start",
           {{"type", "content_block_start"}, {"index", Index()}, {"content_block", start}});
    }
    open_text += text;
    json delta = kind == Open::kThinking ? json{{"type", "thinking_delta"}, {"thinking", text}}
                                         : json{{"type", "text_delta"}, {"text", text}};
    Emit("content_block_delta", {{"type", "content_block_delta"}, {"index", Index()}, {"delta", delta}});
  }

  void AddCall(const chat::ParsedToolCall& call) {
    Close();
    const std::string call_id = "toolu_" + ToolCallId(id, 0, calls++).substr(5);
    json input = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (!input.is_object()) input = json::object();
    Emit("content_block_start",
         {{"type", "content_block_start"},
          {"index", Index()},
          {"content_block",
           {{"type", "tool_use"}, {"id", call_id}, {"name", call.name}, {"input", json::object()}}}});
    Emit("content_block_delta",
         {{"type", "content_block_delta"},
          {"index", Index()},
          {"delta", {{"type", "input_json_delta"}, {"partial_json", DumpJson(input)}}}});
    Emit("content_block_stop", {{"type", "content_block_stop"}, {"index", Index()}});
    content.push_back(
        {{"type", "tool_use"}, {"id", call_id}, {"name", call.name}, {"input", std::move(input)}});
  }

  void Apply(const chat::OutputDelta& delta) {
    if (reasoning_parser) {
      Append(Open::kThinking, delta.reasoning);
    } else if (reasoning_as_content) {
      Append(Open::kText, delta.reasoning);
    }
    Append(Open::kText, delta.content);
    for (const chat::ParsedToolCall& call : delta.tool_calls) AddCall(call);
  }

  std::vector<std::string> OnEvent(const engine::Event& event) {
    events.clear();
    if (event.choice != 0) return {};
    if (!started) {
      started = true;
      Emit("message_start", {{"type", "message_start"}, {"message", MessageObject(false)}});
      Emit("ping", {{"type", "ping"}});
    }
    chat::OutputDelta delta = parser.Push(event.text);
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
      if (failure) {
        Emit("error", json::parse(AnthropicErrorBody(*failure)));
      } else {
        auto [reason, sequence] = StopReason();
        Emit("message_delta", {{"type", "message_delta"},
                               {"delta", {{"stop_reason", reason}, {"stop_sequence", sequence}}},
                               {"usage", Usage(true)}});
        Emit("message_stop", {{"type", "message_stop"}});
      }
    }
    return std::move(events);
  }
};

AnthropicResponder::AnthropicResponder(const AnthropicPlan& plan, const ServerContext& ctx, std::string id,
                                       int64_t /*created*/)
    : impl_(std::make_unique<Impl>(plan, ctx, std::move(id))) {}
AnthropicResponder::~AnthropicResponder() = default;
std::vector<std::string> AnthropicResponder::OnEvent(const engine::Event& event) {
  return impl_->OnEvent(event);
}
std::string AnthropicResponder::FinalBody() const { return DumpJson(impl_->MessageObject(true)); }
const std::optional<ApiError>& AnthropicResponder::failure() const { return impl_->failure; }

}  // namespace k3::api
