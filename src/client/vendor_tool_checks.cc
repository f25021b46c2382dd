// The tool and structured-output checks of the vendor suite: the schema corpus (each call streamed and
// not, the stream's argument deltas reassembled by ChatStreamAccumulator), tool_choice required / named /
// none, tools declared in a system message, and response_format json_schema. Arguments and replies are
// judged with k3's own JSON Schema validator (src/chat/schema_validator.h). Forced calls (required or
// named) are asked for, so a model may not answer in text instead; the finish_reason of each answer is
// judged once, by the finish-reason check.
#include <optional>

#include <fmt/format.h>

#include "src/chat/schema_validator.h"
#include "src/client/vendor_internal.h"

namespace k3::client::vendor_internal {
namespace {

using nlohmann::json;
using verify_internal::Fail;
using verify_internal::Pass;

json UserMessages(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

// The problem with the tool calls of an answer, or nullopt. `only` non-empty: every call must be to it.
std::optional<std::string> JudgeCalls(const ChatResult& result, const json& tools, const std::string& only) {
  if (result.tool_calls.empty()) return fmt::format("no tool_calls ({})", DescribeAnswer(result));
  for (size_t i = 0; i < result.tool_calls.size(); ++i) {
    const ToolCall& call = result.tool_calls[i];
    if (!only.empty() && call.name != only) {
      return fmt::format("tool_calls[{}] calls '{}', but tool_choice named '{}'", i, call.name, only);
    }
    const json* schema = FindToolSchema(tools, call.name);
    if (schema == nullptr)
      return fmt::format("tool_calls[{}] calls '{}', which was not declared", i, call.name);
    Status valid = ValidateToolArguments(call.arguments, *schema);
    if (!valid.ok()) {
      return fmt::format("tool_calls[{}] {}({}) breaks the schema: {}", i, call.name,
                         Snippet(call.arguments, 80), valid.message());
    }
  }
  return std::nullopt;
}

std::string CallsText(const ChatResult& result) {
  std::string out;
  for (const ToolCall& call : result.tool_calls) {
    if (!out.empty()) out += ", ";
    out += call.name + "(" + Snippet(call.arguments, 80) + ")";
  }
  return out;
}

// Asks `request` non-streamed and streamed; fails on the first problem `judge` finds in either answer.
template <typename Judge, typename What>
CheckResult BothWays(VendorRun& vr, const std::string& label, const json& request, Judge judge, What what) {
  const ChatAnswer plain = vr.Ask(label, request);
  if (plain.failure) return *plain.failure;
  if (auto problem = judge(plain.result)) return Fail("non-streamed: " + *problem, plain.evidence);
  const StreamCapture streamed = vr.Stream(label, request);
  if (!streamed.transport.ok()) return Fail("streamed: " + streamed.transport.message(), plain.evidence);
  const std::string stream_evidence =
      fmt::format("streamed: HTTP {}, {} chunks: {}", streamed.response.status, streamed.chat.chunks(),
                  Snippet(streamed.raw, 200));
  if (!streamed.chat.errors().empty()) {
    return Fail("streamed: " + streamed.chat.errors().front(), stream_evidence);
  }
  if (auto problem = judge(streamed.chat.result())) return Fail("streamed: " + *problem, stream_evidence);
  return Pass(fmt::format("non-streamed {}; streamed ({} chunks reassembled) {}", what(plain.result),
                          streamed.chat.chunks(), what(streamed.chat.result())),
              plain.evidence);
}

}  // namespace

CheckResult CheckToolArgs(VendorRun& vr, const ToolSchemaCase& tool_case) {
  const json tools = json::array({tool_case.tool});
  const json request = {{"messages", UserMessages(tool_case.prompt)},
                        {"tools", tools},
                        {"tool_choice", "required"},
                        {"max_tokens", vr.options.verify.max_tokens},
                        {"temperature", 0}};
  return BothWays(
      vr, "tool-args-" + tool_case.name, request,
      [&](const ChatResult& r) { return JudgeCalls(r, tools, tool_case.name); },
      [](const ChatResult& r) { return CallsText(r) + " valid"; });
}

CheckResult CheckToolChoiceRequired(VendorRun& vr) {
  const json tools = json::array({ToolSchemaCorpus().front().tool, TimeTool()});
  const json request = {{"messages", UserMessages("What time is it in Paris, and how warm is it there?")},
                        {"tools", tools},
                        {"tool_choice", "required"},
                        {"max_tokens", vr.options.verify.max_tokens},
                        {"temperature", 0}};
  const ChatAnswer answer = vr.Ask("tool-choice-required", request);
  if (answer.failure) return *answer.failure;
  if (auto problem = JudgeCalls(answer.result, tools, "")) return Fail(*problem, answer.evidence);
  return Pass(CallsText(answer.result) + " valid", answer.evidence);
}

CheckResult CheckToolChoiceNamed(VendorRun& vr) {
  const json tools = json::array({ToolSchemaCorpus().front().tool, TimeTool()});
  const json request = {{"messages", UserMessages("What is the weather in Paris?")},
                        {"tools", tools},
                        {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
                        {"max_tokens", vr.options.verify.max_tokens},
                        {"temperature", 0}};
  const ChatAnswer answer = vr.Ask("tool-choice-named", request);
  if (answer.failure) return *answer.failure;
  if (auto problem = JudgeCalls(answer.result, tools, "get_time")) return Fail(*problem, answer.evidence);
  return Pass(CallsText(answer.result) + " valid (the prompt asked for the weather; the named tool won)",
              answer.evidence);
}

CheckResult CheckToolChoiceNone(VendorRun& vr) {
  const json tools = json::array({ToolSchemaCorpus().front().tool, TimeTool()});
  const json request = {{"messages", UserMessages("What is the weather in Paris? Use get_weather.")},
                        {"tools", tools},
                        {"tool_choice", "none"},
                        {"max_tokens", 32},
                        {"temperature", 0}};
  const ChatAnswer answer = vr.Ask("tool-choice-none", request);
  if (answer.failure) return *answer.failure;
  if (!answer.result.tool_calls.empty()) {
    return Fail(fmt::format("tool_choice none, but the message has tool_calls: {}", CallsText(answer.result)),
                answer.evidence);
  }
  if (answer.result.finish_reason == "tool_calls") {
    return Fail("tool_choice none, but finish_reason is tool_calls", answer.evidence);
  }
  return Pass(fmt::format("no tool_calls ({})", DescribeAnswer(answer.result)), answer.evidence);
}

CheckResult CheckDynamicTools(VendorRun& vr) {
  const json first_turns = {{{"role", "system"}, {"content", "You are a helpful assistant."}},
                            {{"role", "user"}, {"content", "Hello."}},
                            {{"role", "assistant"}, {"content", "Hello! How can I help?"}}};
  json without = first_turns;
  without.push_back({{"role", "user"}, {"content", "What time is it in Tokyo?"}});
  json with = first_turns;
  with.push_back({{"role", "system"}, {"content", ""}, {"tools", json::array({TimeTool()})}});
  with.push_back({{"role", "user"}, {"content", "What time is it in Tokyo?"}});
  const json tools = json::array({ToolSchemaCorpus().front().tool});
  auto request = [&](const json& messages) {
    return json{{"messages", messages}, {"tools", tools}, {"max_tokens", 1}, {"temperature", 0}};
  };
  const ChatAnswer base = vr.Ask("dynamic-tools", request(without));
  if (base.failure) return *base.failure;
  const ChatAnswer dynamic = vr.Ask("dynamic-tools", request(with));
  if (dynamic.failure) {
    CheckResult failure = *dynamic.failure;
    failure.detail = "a system message with tools was refused: " + failure.detail;
    return failure;
  }
  if (!base.result.usage || !dynamic.result.usage) return Fail("an answer has no usage", dynamic.evidence);
  const int64_t before = base.result.usage->prompt_tokens, after = dynamic.result.usage->prompt_tokens;
  if (after <= before) {
    return Fail(fmt::format("the declaration did not reach the prompt: prompt_tokens {} with it, {} without",
                            after, before),
                dynamic.evidence);
  }
  auto expected = vr.ExpectedPromptTokens(request(with));
  if (expected.ok() && expected->tokens != after) {
    return Fail(fmt::format("prompt_tokens {} with the declaration, {} by {} (MISMATCH)", after,
                            expected->tokens, expected->how),
                dynamic.evidence);
  }
  return Pass(fmt::format("accepted; prompt_tokens {} with the declaration, {} without{}", after, before,
                          expected.ok() ? fmt::format(", {} by {}", expected->tokens, expected->how) : ""),
              dynamic.evidence);
}

CheckResult CheckResponseFormat(VendorRun& vr) {
  const json& schema = ResponseFormatSchema();
  const json request = {
      {"messages", UserMessages("Give the largest city of Japan as JSON.")},
      {"response_format",
       {{"type", "json_schema"}, {"json_schema", {{"name", "city"}, {"schema", schema}, {"strict", true}}}}},
      {"max_tokens", vr.options.verify.max_tokens},
      {"temperature", 0}};
  auto judge = [&](const ChatResult& r) -> std::optional<std::string> {
    const json value = json::parse(r.content, nullptr, false);
    if (value.is_discarded()) return fmt::format("the content is not JSON ({})", DescribeAnswer(r));
    if (auto violation = chat::FindSchemaViolation(schema, value)) {
      return fmt::format("the content {} breaks the schema: {}", Snippet(r.content, 80),
                         violation->Message());
    }
    return std::nullopt;
  };
  return BothWays(vr, "response-format", request, judge,
                  [](const ChatResult& r) { return "'" + Snippet(r.content, 60) + "' valid"; });
}

}  // namespace k3::client::vendor_internal
