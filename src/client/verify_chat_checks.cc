// The chat checks of k3 verify: tool calls (auto / required) validated against the declared schema,
// reasoning output, streaming vs non-streaming at temperature 0, and the SSE framing of that stream.
// tool_choice auto lets a model answer in text, so tool-calls-auto passes on a text answer (any calls
// that come are validated); tool-calls-required must get a call.
#include <tuple>

#include <fmt/format.h>

#include "src/client/json_schema_check.h"
#include "src/client/verify_internal.h"

namespace k3::client::verify_internal {
namespace {

using nlohmann::json;

const json& WeatherTool() {
  static const json tool = json::parse(R"({
    "type": "function",
    "function": {
      "name": "get_weather",
      "description": "Get the current weather in a city.",
      "parameters": {
        "type": "object",
        "properties": {
          "city": {"type": "string", "description": "City name, e.g. Paris"},
          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        },
        "required": ["city", "unit"],
        "additionalProperties": false
      }
    }
  })");
  return tool;
}

std::string Describe(const ChatResult& r) {
  std::string out = fmt::format("finish_reason={}", r.finish_reason.empty() ? "none" : r.finish_reason);
  if (!r.content.empty()) out += ", content '" + Snippet(r.content, 80) + "'";
  return out;
}

}  // namespace

CheckResult CheckToolCalls(Run& run, const std::string& tool_choice) {
  const json request = {
      {"messages",
       {{{"role", "user"},
         {"content", "What is the weather in Paris, in celsius? Use the get_weather tool."}}}},
      {"tools", {WeatherTool()}},
      {"tool_choice", tool_choice},
      {"max_tokens", run.options.max_tokens},
      {"temperature", 0}};
  const ChatAnswer answer = AskChat(run, request);
  if (answer.failure) {
    CheckResult failure = *answer.failure;
    if (answer.response.status == 400 && tool_choice == "auto") {
      failure.detail +=
          " -- tool_choice auto was refused: is the tool-call parser enabled (vLLM: "
          "--enable-auto-tool-choice --tool-call-parser)?";
    }
    return failure;
  }
  const ChatResult& result = answer.result;
  const std::string& evidence = answer.evidence;
  if (result.tool_calls.empty()) {
    if (tool_choice != "auto") {
      return Fail(fmt::format("no tool_calls in the message although tool_choice is {} ({}) -- is the "
                              "tool-call parser enabled (vLLM: --tool-call-parser)?",
                              tool_choice, Describe(result)),
                  evidence);
    }
    // tool_choice auto lets the model answer in text; a call written into the text means the server's
    // tool-call parser did not recognise the model's format.
    if (result.content.find("get_weather") != std::string::npos) {
      return Fail(fmt::format("no tool_calls, but the content names get_weather ({}) -- does the server's "
                              "tool-call parser match the model's format?",
                              Describe(result)),
                  evidence);
    }
    if (result.finish_reason == "tool_calls") {
      return Fail("finish_reason is 'tool_calls' but the message has no tool_calls", evidence);
    }
    return Pass(fmt::format("accepted; the model answered without a tool call ({}), which tool_choice auto "
                            "allows (tool-calls-required checks that a call is made)",
                            Describe(result)),
                evidence);
  }
  const json& schema = WeatherTool()["function"]["parameters"];
  for (size_t i = 0; i < result.tool_calls.size(); ++i) {
    const ToolCall& call = result.tool_calls[i];
    if (call.name != "get_weather") {
      return Fail(fmt::format("tool_calls[{}] calls '{}', which was not declared", i, call.name), evidence);
    }
    const json arguments = json::parse(call.arguments, nullptr, false);
    if (arguments.is_discarded()) {
      return Fail(fmt::format("tool_calls[{}].function.arguments is not JSON: '{}' ({})", i,
                              Snippet(call.arguments), Describe(result)),
                  evidence);
    }
    Status valid = ValidateAgainstSchema(arguments, schema);
    if (!valid.ok()) {
      return Fail(fmt::format("tool_calls[{}] arguments {} do not match the declared schema: {}", i,
                              Snippet(call.arguments), valid.message()),
                  evidence);
    }
  }
  if (result.finish_reason != "tool_calls") {
    return Fail(fmt::format("valid tool_calls but finish_reason is '{}', expected 'tool_calls'",
                            result.finish_reason),
                evidence);
  }
  return Pass(fmt::format("{} call(s), get_weather({}) valid against the schema", result.tool_calls.size(),
                          Snippet(result.tool_calls[0].arguments, 80)),
              evidence);
}

CheckResult CheckReasoning(Run& run) {
  const json request = {
      {"messages", {{{"role", "user"}, {"content", "What is 17 * 23? Think it through step by step."}}}},
      {"max_tokens", run.options.max_tokens}};
  const ChatAnswer answer = AskChat(run, request);
  if (answer.failure) return *answer.failure;
  const ChatResult& result = answer.result;
  if (result.reasoning_field.empty()) {
    return Fail(
        fmt::format("the message has neither reasoning_content nor reasoning ({}) -- is the reasoning "
                    "parser enabled (vLLM: --reasoning-parser)?",
                    Describe(result)),
        answer.evidence);
  }
  if (result.reasoning.empty()) {
    return Fail(fmt::format("{} is present but empty ({})", result.reasoning_field, Describe(result)),
                answer.evidence);
  }
  return Pass(fmt::format("field '{}': '{}'", result.reasoning_field, Snippet(result.reasoning, 80)),
              answer.evidence);
}

CheckResult CheckStreamEqualsNonStream(Run& run) {
  const json request = {
      {"messages",
       {{{"role", "user"}, {"content", "Name three prime numbers and explain why they are prime."}}}},
      {"max_tokens", 32},
      {"temperature", 0},
      {"seed", 0}};
  const ChatAnswer answer = AskChat(run, request);
  if (answer.failure) return *answer.failure;
  const ChatResult& plain = answer.result;
  run.stream = run.ChatStream(request);
  const StreamCapture& s = *run.stream;
  if (!s.transport.ok()) return Fail("streaming request: " + s.transport.message());
  const std::string evidence =
      fmt::format("non-streaming: '{}' | streaming ({} chunks in {:.0f} ms): '{}'",
                  Snippet(plain.reasoning + plain.content, 100), s.chat.chunks(), s.response.elapsed_s * 1000,
                  Snippet(s.chat.result().reasoning + s.chat.result().content, 100));
  for (const auto& [field, a, b] : {std::tuple{"content", plain.content, s.chat.result().content},
                                    std::tuple{"reasoning", plain.reasoning, s.chat.result().reasoning}}) {
    if (a == b) continue;
    size_t at = 0;
    while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
    return Fail(
        fmt::format("{} differs at byte {}: non-streaming '{}' vs streaming '{}'", field, at,
                    Snippet(std::string_view(a).substr(at), 40), Snippet(std::string_view(b).substr(at), 40)),
        evidence);
  }
  if (plain.content.empty() && plain.reasoning.empty()) {
    return Fail("both answers are empty, nothing to compare", evidence);
  }
  return Pass(fmt::format("{} bytes of content and {} of reasoning identical", plain.content.size(),
                          plain.reasoning.size()),
              evidence);
}

CheckResult CheckSseFormat(Run& run) {
  if (!run.stream) return Skip("no streamed answer (stream-equals-non-stream did not stream)");
  const StreamCapture& s = *run.stream;
  if (!s.transport.ok()) return Fail("streaming request: " + s.transport.message());
  const std::string evidence =
      fmt::format("HTTP {} {} in {:.0f} ms, {} events: {}", s.response.status, s.response.content_type,
                  s.response.elapsed_s * 1000, s.sse.events(), Snippet(s.raw, 200));
  std::vector<std::string> problems;
  if (s.response.content_type.rfind("text/event-stream", 0) != 0) {
    problems.push_back("content-type is '" + s.response.content_type + "', expected text/event-stream");
  }
  for (const std::string& e : s.sse.errors()) problems.push_back(e);
  for (const std::string& e : s.chat.errors()) problems.push_back(e);
  if (!s.chat.usage_chunk_seen()) {
    problems.push_back("no usage chunk (choices [] + usage) although stream_options.include_usage was true");
  }
  if (s.chat.result().finish_reason.empty()) problems.push_back("no chunk carried a finish_reason");
  if (!problems.empty()) return Fail(fmt::format("{}", fmt::join(problems, "; ")), evidence);
  return Pass(fmt::format("{} events, usage chunk (prompt_tokens={}, completion_tokens={}), [DONE] last",
                          s.sse.events(), s.chat.result().usage->prompt_tokens,
                          s.chat.result().usage->completion_tokens),
              evidence);
}

}  // namespace k3::client::verify_internal
