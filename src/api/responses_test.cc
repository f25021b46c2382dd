// /v1/responses: the translation into a chat request (input items, instructions, tools, tool_choice,
// max_output_tokens, reasoning effort, text.format), the refusals, and ResponsesResponder's items and
// typed stream events (reasoning, message, function calls; completed / incomplete / failed).
#include "src/api/responses.h"

#include <string>

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"

namespace k3::api {
namespace {

using engine::FinishReason;
using nlohmann::json;
using testing::Ev;
using testing::ParseAll;
using testing::TestContext;

TEST(ResponsesRequestTest, TranslatesToTheChatRequest) {
  ApiError error;
  auto plan = ParseResponses(R"({"model": "Kimi-K3", "instructions": "Be brief.", "max_output_tokens": 40,
      "input": [{"role": "developer", "content": "Rules."},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}],
      "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
      "tool_choice": {"type": "function", "name": "get_weather"}, "reasoning": {"effort": "none"},
      "temperature": 0.5, "store": true, "metadata": {"k": "v"}})",
                             TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_EQ(plan->chat.request.sampling.max_tokens, 40);
  EXPECT_FLOAT_EQ(plan->chat.request.sampling.temperature, 0.5f);
  EXPECT_FALSE(plan->chat.parser.thinking);           // effort none
  EXPECT_NE(plan->chat.request.constraint, nullptr);  // the named function is forced
  EXPECT_EQ(plan->echo["max_output_tokens"], 40);
  EXPECT_EQ(plan->echo["metadata"], json({{"k", "v"}}));
  EXPECT_FALSE(plan->stream);

  auto simple = ParseResponses(R"({"input": "hi", "text": {"format": {"type": "json_object"}}})",
                               TestContext(), &error);
  ASSERT_TRUE(simple) << error.message;
  EXPECT_TRUE(simple->chat.parser.thinking);
  EXPECT_NE(simple->chat.request.constraint, nullptr);  // json_object
}

TEST(ResponsesRequestTest, RefusalsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},
      {R"({"input": "x", "background": true})", "background"},
      {R"({"input": "x", "truncation": "auto"})", "truncation"},
      {R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0].type"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image"}]}]})",
       "input[0].content[0].image_url"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_file"}]}]})", "input[0].content[0].type"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]})",
       "input[0].content[0].file_id"},
      {R"({"input": [{"role": "robot", "content": "x"}]})", "input[0].role"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input[0].output"},
      {R"({"input": [5]})", "input[0]"},
      {R"({"input": 5})", "input"},
      {R"({})", "input"},
      {R"({"input": "x", "text": {"format": {"type": "yaml"}}})", "text.format.type"},
      {R"({"input": "x", "temperature": "hot"})", "temperature"},
  };
  for (const auto& [body, param] : cases) {
    ApiError error;
    EXPECT_FALSE(ParseResponses(body, TestContext(), &error)) << body;
    EXPECT_EQ(error.http_status, 400) << body;
    EXPECT_EQ(error.param, param) << body << " -> " << error.message;
  }
  ApiError error;
  EXPECT_FALSE(ParseResponses(R"({"input": "x", "model": "other"})", TestContext(), &error));
  EXPECT_EQ(error.http_status, 404);
}

ResponsesPlan MakeResponsesPlan(bool stream, bool tools = false) {
  ApiError error;
  std::string body = std::string(R"({"input": "hi", "stream": )") + (stream ? "true" : "false");
  if (tools) body += R"(, "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}])";
  auto plan = ParseResponses(body + "}", TestContext(), &error);
  EXPECT_TRUE(plan) << error.message;
  return std::move(*plan);
}

TEST(ResponsesResponderTest, ReasoningMessageAndCallItemsStreamedAndWhole) {
  const ServerContext ctx = TestContext();
  const ResponsesPlan plan = MakeResponsesPlan(true, /*tools=*/true);
  ResponsesResponder streaming(plan, ctx, "resp_1", 5);
  ResponsesResponder whole(MakeResponsesPlan(false, true), ctx, "resp_1", 5);
  std::vector<engine::Event> events = {
      Ev(0, "Think"), Ev(0, "ing.<|close|>think<|sep|><|open|>response<|sep|>Hel"),
      Ev(0,
         "lo<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"f\" index=\"1\"<|sep|>"
         "<|open|>argument key=\"a\" type=\"integer\"<|sep|>7<|close|>argument<|sep|><|close|>call<|sep|>"
         "<|close|>tools<|sep|>",
         FinishReason::kStop, true)};
  events[2].usage = {10, 2, 6};
  std::vector<std::string> payloads;
  for (const auto& event : events) {
    for (auto& p : streaming.OnEvent(event)) payloads.push_back(std::move(p));
    EXPECT_TRUE(whole.OnEvent(event).empty());
  }
  const json body = json::parse(whole.FinalBody());
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["status"], "completed");
  ASSERT_EQ(body["output"].size(), 3u) << body.dump();
  EXPECT_EQ(body["output"][0]["type"], "reasoning");
  EXPECT_EQ(body["output"][0]["content"][0]["text"], "Thinking.");
  EXPECT_EQ(body["output"][1]["type"], "message");
  EXPECT_EQ(body["output"][1]["content"][0]["text"], "Hello");
  EXPECT_EQ(body["output"][2]["type"], "function_call");
  EXPECT_EQ(body["output"][2]["name"], "f");
  EXPECT_EQ(json::parse(body["output"][2]["arguments"].get<std::string>()), json({{"a", 7}}));
  EXPECT_EQ(body["usage"]["input_tokens"], 10);
  EXPECT_EQ(body["usage"]["input_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(body["usage"]["total_tokens"], 16);

  const auto stream = ParseAll(payloads);
  ASSERT_GE(stream.size(), 4u);
  std::string text, reasoning;
  for (size_t i = 0; i < stream.size(); ++i) {
    EXPECT_EQ(stream[i]["sequence_number"], static_cast<int64_t>(i));
    if (stream[i]["type"] == "response.output_text.delta") text += stream[i]["delta"].get<std::string>();
    if (stream[i]["type"] == "response.reasoning_text.delta")
      reasoning += stream[i]["delta"].get<std::string>();
  }
  EXPECT_EQ(stream.front()["type"], "response.created");
  EXPECT_EQ(stream.back()["type"], "response.completed");
  EXPECT_EQ(stream.back()["response"]["output"], body["output"]);
  EXPECT_EQ(text, "Hello");
  EXPECT_EQ(reasoning, "Thinking.");
}

TEST(ResponsesResponderTest, LengthIsIncompleteAndErrorsFail) {
  const ServerContext ctx = TestContext();
  ResponsesResponder cut(MakeResponsesPlan(false), ctx, "resp_2", 0);
  cut.OnEvent(Ev(0, "abc", FinishReason::kLength, true));
  const json body = json::parse(cut.FinalBody());
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");

  ResponsesResponder failed(MakeResponsesPlan(true), ctx, "resp_3", 0);
  engine::Event event = Ev(0, "", FinishReason::kError, true);
  event.error = "boom";
  const auto stream = ParseAll(failed.OnEvent(event));
  EXPECT_EQ(stream.back()["type"], "response.failed");
  EXPECT_EQ(stream.back()["response"]["status"], "failed");
  ASSERT_TRUE(failed.failure());
}

}  // namespace
// text.format json_schema: what the grammar leaves to the end (here uniqueItems over strings) is checked
// when the response ends normally, as in chat completions; a violation makes it incomplete.
TEST(ResponsesResponderTest, SchemaViolationAtTheEndIsIncomplete) {
  const ServerContext ctx = TestContext();
  auto plan_for = [&](bool stream) {
    ApiError error;
    const std::string body = std::string(R"({"input": "hi", "reasoning": {"effort": "none"}, "stream": )") +
                             (stream ? "true" : "false") +
                             R"(, "text": {"format": {"type": "json_schema", "name": "tags", "schema":
                                 {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}})";
    auto plan = ParseResponses(body, ctx, &error);
    EXPECT_TRUE(plan) << error.message;
    EXPECT_NE(plan->chat.schema_check, nullptr);
    return std::move(*plan);
  };
  const std::string reply = "<|open|>response<|sep|>";
  ResponsesResponder broken(plan_for(false), ctx, "resp_4", 0);
  broken.OnEvent(Ev(0, reply + R"(["a", "b", "a"])", FinishReason::kStop, true));
  const json body = json::parse(broken.FinalBody());
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"]["reason"], "schema_violation");
  EXPECT_NE(body["incomplete_details"]["message"].get<std::string>().find("uniqueItems"), std::string::npos)
      << body.dump();

  ResponsesResponder streamed(plan_for(true), ctx, "resp_5", 0);
  const auto stream = ParseAll(streamed.OnEvent(Ev(0, reply + R"(["a", "a"])", FinishReason::kStop, true)));
  EXPECT_EQ(stream.back()["type"], "response.incomplete");
  EXPECT_EQ(stream.back()["response"]["incomplete_details"]["reason"], "schema_violation");

  ResponsesResponder fine(plan_for(false), ctx, "resp_6", 0);
  fine.OnEvent(Ev(0, reply + R"(["a", "b"])", FinishReason::kStop, true));
  const json ok = json::parse(fine.FinalBody());
  EXPECT_EQ(ok["status"], "completed") << ok.dump();
  EXPECT_TRUE(ok["incomplete_details"].is_null());
}

}  // namespace k3::api
