// /v1/messages: the translation into a chat request (system, blocks, tools, tool_choice, thinking,
// stop_sequences), the refusals and Anthropic error bodies, count_tokens, and AnthropicResponder's message
// object and stream events (thinking, text, tool_use; end_turn / stop_sequence / max_tokens / tool_use;
// engine failure) over scripted engine events.
#include "src/api/anthropic.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"
#include "src/api/image_parts.h"
#include "src/base/base64.h"
#include "src/image/image_test_files.h"

namespace k3::api {
namespace {

using engine::FinishReason;
using nlohmann::json;
using testing::ByteTokenizer;
using testing::Ev;
using testing::TestContext;

std::string AnthropicPromptText(const AnthropicPlan& plan) {
  const std::vector<tokenizer::TokenId> ids(plan.chat.request.prompt.begin(), plan.chat.request.prompt.end());
  auto text = ByteTokenizer().Decode(ids);
  return text.ok() ? *text : std::string();
}

TEST(AnthropicRequestTest, TranslatesToTheChatRequest) {
  ApiError error;
  auto plan = ParseAnthropicMessages(R"({"model": "Kimi-K3", "max_tokens": 40,
      "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
      "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Use the tool.", "signature": "s"},
                                          {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                           "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "text", "text": "sunny"}]},
                                     {"type": "text", "text": "And tomorrow?"}]}],
      "tools": [{"name": "get_weather", "description": "Weather", "input_schema":
                 {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
      "tool_choice": {"type": "tool", "name": "get_weather"}, "thinking": {"type": "disabled"},
      "stop_sequences": ["END"], "temperature": 0.5, "top_k": 7, "metadata": {"user_id": "u"}})",
                                     TestContext(), &error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_EQ(plan->chat.request.sampling.max_tokens, 40);
  EXPECT_FLOAT_EQ(plan->chat.request.sampling.temperature, 0.5f);
  EXPECT_EQ(plan->chat.request.sampling.top_k, 7);
  EXPECT_EQ(plan->chat.stop, std::vector<std::string>{"END"});
  EXPECT_FALSE(plan->chat.parser.thinking);           // thinking disabled
  EXPECT_NE(plan->chat.request.constraint, nullptr);  // the named tool is forced
  EXPECT_FALSE(plan->stream);
  const std::string prompt = AnthropicPromptText(*plan);
  for (const char* piece :
       {"Be brief.", "Weather in Paris?", "get_weather", "Paris", "sunny", "And tomorrow?"})
    EXPECT_NE(prompt.find(piece), std::string::npos) << piece << " in " << prompt;

  // Messages with role "system" join the system message; billing-header blocks are dropped.
  auto joined = ParseAnthropicMessages(R"({"model": "Kimi-K3", "max_tokens": 4, "system": [
      {"type": "text", "text": "x-anthropic-billing-header: cc_version=1; cch=abc"},
      {"type": "text", "text": "Rule one."}],
      "messages": [{"role": "system", "content": " Rule two."}, {"role": "user", "content": "Go."}]})",
                                       TestContext(), &error);
  ASSERT_TRUE(joined) << error.message;
  const std::string joined_prompt = AnthropicPromptText(*joined);
  EXPECT_NE(joined_prompt.find("Rule one. Rule two."), std::string::npos) << joined_prompt;
  EXPECT_EQ(joined_prompt.find("billing"), std::string::npos) << joined_prompt;

  auto streamed = ParseAnthropicMessages(
      R"({"model": "Kimi-K3", "max_tokens": 5, "stream": true, "messages": [{"role": "user", "content": "hi"}],
          "thinking": {"type": "enabled", "budget_tokens": 1024}})",
      TestContext(), &error);
  ASSERT_TRUE(streamed) << error.message;
  EXPECT_TRUE(streamed->stream);
  EXPECT_TRUE(streamed->chat.parser.thinking);
  EXPECT_EQ(streamed->chat.request.constraint, nullptr);
}

TEST(AnthropicRequestTest, AnyToolChoiceForcesACallAndNoneDoesNot) {
  const std::string head =
      R"({"model": "Kimi-K3", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}],
      "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": )";
  ApiError error;
  auto any = ParseAnthropicMessages(head + R"({"type": "any"}})", TestContext(), &error);
  ASSERT_TRUE(any) << error.message;
  EXPECT_NE(any->chat.request.constraint, nullptr);
  auto none = ParseAnthropicMessages(head + R"({"type": "none"}})", TestContext(), &error);
  ASSERT_TRUE(none) << error.message;
  EXPECT_EQ(none->chat.request.constraint, nullptr);
  EXPECT_FALSE(none->chat.parser.tools_enabled);
}

TEST(AnthropicRequestTest, RefusalsNameTheField) {
  const std::string msgs = R"("messages": [{"role": "user", "content": "x"}])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"model": "Kimi-K3", )" + msgs + "}", "max_tokens"},
      {R"({"max_tokens": 4, )" + msgs + "}", "model"},
      {R"({"model": "Kimi-K3", "max_tokens": 4})", "messages"},
      {R"({"model": "Kimi-K3", "max_tokens": 0, )" + msgs + "}", "max_tokens"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "tool", "content": "x"}]})",
       "messages[0].role"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "document"}]}]})",
       "messages[0].content[0].type"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "text"}]}]})",
       "messages[0].content[0].text"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "assistant", "content":
          [{"type": "tool_use", "name": "f", "input": {}}]}]})",
       "messages[0].content[0].id"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "user", "content":
          [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}]})",
       "messages[0].content[0].source.type"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, )" + msgs + R"(, "tools": [{"type": "web_search_20250305",
          "name": "web_search"}]})",
       "tools[0].type"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "system", "content": 5}]})",
       "messages[0].content"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, )" + msgs + R"(, "tools": [{"name": "f"}]})",
       "tools[0].input_schema"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, )" + msgs + R"(, "tool_choice": {"type": "some"}})",
       "tool_choice.type"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, )" + msgs + R"(, "thinking": {"type": "maybe"}})",
       "thinking.type"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, )" + msgs + R"(, "temperature": "hot"})", "temperature"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, )" + msgs + R"(, "mcp_servers": [{"url": "x"}]})",
       "mcp_servers"},
      {R"({"model": "Kimi-K3", "max_tokens": 4, )" + msgs + R"(, "stop_sequences": "END"})",
       "stop_sequences"},
  };
  for (const auto& [body, param] : cases) {
    ApiError error;
    EXPECT_FALSE(ParseAnthropicMessages(body, TestContext(), &error)) << body;
    EXPECT_EQ(error.http_status, 400) << body;
    EXPECT_EQ(error.param, param) << body << " -> " << error.message;
    const json shaped = json::parse(AnthropicErrorBody(error));
    EXPECT_EQ(shaped["type"], "error");
    EXPECT_EQ(shaped["error"]["type"], "invalid_request_error");
    EXPECT_EQ(shaped["error"]["message"], error.message);
  }
  ApiError error;
  EXPECT_FALSE(
      ParseAnthropicMessages(R"({"model": "other", "max_tokens": 4, )" + msgs + "}", TestContext(), &error));
  EXPECT_EQ(error.http_status, 404);
  EXPECT_EQ(json::parse(AnthropicErrorBody(error))["error"]["type"], "not_found_error");
  EXPECT_FALSE(ParseAnthropicMessages("{not json", TestContext(), &error));
  EXPECT_EQ(error.http_status, 400);
}

// Image blocks: a base64 source becomes a data: URL the image path loads; without a vision tower the 400
// names the Anthropic block, not the chat part it became.
TEST(AnthropicRequestTest, ImageBlocks) {
  const auto png = image::testing::Png(image::testing::Pattern(40, 30, 3, 5), 40, 30, 2);
  const std::string data =
      Base64Encode(std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
  const std::string body = R"({"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "user", "content": [
      {"type": "text", "text": "What is this?"},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ")" +
                           data + R"("}}]}]})";
  ApiError error;
  EXPECT_FALSE(ParseAnthropicMessages(body, TestContext(), &error));
  EXPECT_EQ(error.param.rfind("messages[0].content[1]", 0), 0u) << error.param << ": " << error.message;

  ServerContext ctx = TestContext();
  auto media = std::make_shared<MediaSettings>();
  media->model_has_vision = true;
  media->processor = image::K3ProcessorConfig();
  media->limits = image::DefaultDecodeLimits();
  ctx.media = std::move(media);
  auto plan = ParseAnthropicMessages(body, ctx, &error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_EQ(plan->chat.request.images.size(), 1u);
  auto count = AnthropicCountTokens(body, ctx, &error);
  ASSERT_TRUE(count) << error.message;
  EXPECT_EQ(json::parse(*count)["input_tokens"], plan->chat.prompt_tokens);
}

TEST(AnthropicRequestTest, CountTokensMatchesTheMessagePrompt) {
  const std::string body =
      R"({"model": "Kimi-K3", "system": "sys", "messages": [{"role": "user", "content": "hello"}],
      "tools": [{"name": "f", "input_schema": {"type": "object"}}]})";
  ApiError error;
  auto count = AnthropicCountTokens(body, TestContext(), &error);
  ASSERT_TRUE(count) << error.message;
  auto plan = ParseAnthropicMessages(body.substr(0, body.size() - 1) + R"(, "max_tokens": 3})", TestContext(),
                                     &error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_EQ(json::parse(*count), json({{"input_tokens", plan->chat.prompt_tokens}}));
  EXPECT_GT(plan->chat.prompt_tokens, 0);
  EXPECT_FALSE(AnthropicCountTokens(R"({"model": "Kimi-K3", "messages": []})", TestContext(), &error));
  EXPECT_EQ(error.param, "messages");
}

AnthropicPlan MakeAnthropicPlan(bool stream, const std::string& extra = "") {
  ApiError error;
  const std::string body = std::string(R"({"model": "Kimi-K3", "max_tokens": 64, "messages": [{"role": "user",
      "content": "hi"}], "tools": [{"name": "f", "input_schema": {"type": "object"}}], "stream": )") +
                           (stream ? "true" : "false") + extra + "}";
  auto plan = ParseAnthropicMessages(body, TestContext(), &error);
  EXPECT_TRUE(plan) << error.message;
  return std::move(*plan);
}

// "event: NAME\n{json}" payloads -> (name, json) pairs.
std::vector<std::pair<std::string, json>> SplitEvents(const std::vector<std::string>& payloads) {
  std::vector<std::pair<std::string, json>> out;
  for (const std::string& payload : payloads) {
    EXPECT_EQ(payload.rfind("event: ", 0), 0u) << payload;
    const size_t newline = payload.find('\n');
    out.emplace_back(payload.substr(7, newline - 7), json::parse(payload.substr(newline + 1)));
    EXPECT_EQ(out.back().first, out.back().second["type"]);
  }
  return out;
}

TEST(AnthropicResponderTest, ThinkingTextAndToolUseStreamedAndWhole) {
  const ServerContext ctx = TestContext();
  AnthropicResponder streaming(MakeAnthropicPlan(true), ctx, "msg_1", 5);
  AnthropicResponder whole(MakeAnthropicPlan(false), ctx, "msg_1", 5);
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
  EXPECT_FALSE(whole.failure());
  const json body = json::parse(whole.FinalBody());
  EXPECT_EQ(body["id"], "msg_1");
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["role"], "assistant");
  EXPECT_EQ(body["model"], "Kimi-K3");
  ASSERT_EQ(body["content"].size(), 3u) << body.dump();
  EXPECT_EQ(body["content"][0]["type"], "thinking");
  EXPECT_EQ(body["content"][0]["thinking"], "Thinking.");
  EXPECT_TRUE(body["content"][0]["signature"].is_string());
  EXPECT_EQ(body["content"][1], json({{"type", "text"}, {"text", "Hello"}}));
  EXPECT_EQ(body["content"][2]["type"], "tool_use");
  EXPECT_EQ(body["content"][2]["name"], "f");
  EXPECT_EQ(body["content"][2]["input"], json({{"a", 7}}));
  EXPECT_EQ(body["content"][2]["id"].get<std::string>().rfind("toolu_", 0), 0u);
  EXPECT_EQ(body["stop_reason"], "tool_use");
  EXPECT_TRUE(body["stop_sequence"].is_null());
  EXPECT_EQ(body["usage"]["input_tokens"], 10);
  EXPECT_EQ(body["usage"]["output_tokens"], 6);
  EXPECT_EQ(body["usage"]["cache_read_input_tokens"], 2);

  const auto stream = SplitEvents(payloads);
  std::vector<std::string> names;
  for (const auto& [name, event] : stream) names.push_back(name);
  const std::vector<std::string> expected = {"message_start",       "ping",
                                             "content_block_start", "content_block_delta",
                                             "content_block_delta", "content_block_delta",
                                             "content_block_stop",  "content_block_start",
                                             "content_block_delta", "content_block_delta",
                                             "content_block_stop",  "content_block_start",
                                             "content_block_delta", "content_block_stop",
                                             "message_delta",       "message_stop"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(stream[0].second["message"]["usage"]["output_tokens"], 0);
  EXPECT_EQ(stream[0].second["message"]["content"], json::array());
  EXPECT_TRUE(stream[0].second["message"]["stop_reason"].is_null());
  EXPECT_EQ(stream[2].second["content_block"]["type"], "thinking");
  EXPECT_EQ(stream[3].second["delta"]["type"], "thinking_delta");
  EXPECT_EQ(stream[5].second["delta"]["type"], "signature_delta");
  EXPECT_EQ(stream[5].second["delta"]["signature"], body["content"][0]["signature"]);
  EXPECT_EQ(stream[7].second["index"], 1);
  EXPECT_EQ(stream[8].second["delta"], json({{"type", "text_delta"}, {"text", "Hel"}}));
  EXPECT_EQ(stream[11].second["content_block"]["id"], body["content"][2]["id"]);
  EXPECT_EQ(stream[11].second["content_block"]["input"], json::object());
  EXPECT_EQ(stream[12].second["delta"]["type"], "input_json_delta");
  EXPECT_EQ(json::parse(stream[12].second["delta"]["partial_json"].get<std::string>()), json({{"a", 7}}));
  EXPECT_EQ(stream[13].second["index"], 2);
  EXPECT_EQ(stream[14].second["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(stream[14].second["usage"]["output_tokens"], 6);
}

TEST(AnthropicResponderTest, StopReasons) {
  const ServerContext ctx = TestContext();
  const std::string reply = "<|open|>response<|sep|>abc";
  const std::string no_thinking = R"(, "thinking": {"type": "disabled"}, "stop_sequences": ["END"])";
  AnthropicResponder ended(MakeAnthropicPlan(false, no_thinking), ctx, "msg_2", 0);
  ended.OnEvent(Ev(0, reply, FinishReason::kStop, true));
  json body = json::parse(ended.FinalBody());
  EXPECT_EQ(body["stop_reason"], "end_turn");
  EXPECT_EQ(body["content"], json::array({{{"type", "text"}, {"text", "abc"}}}));

  AnthropicResponder stopped(MakeAnthropicPlan(false, no_thinking), ctx, "msg_3", 0);
  engine::Event event = Ev(0, reply, FinishReason::kStop, true);
  event.stop_reason = "END";
  stopped.OnEvent(event);
  body = json::parse(stopped.FinalBody());
  EXPECT_EQ(body["stop_reason"], "stop_sequence");
  EXPECT_EQ(body["stop_sequence"], "END");

  AnthropicResponder cut(MakeAnthropicPlan(true, no_thinking), ctx, "msg_4", 0);
  const auto stream = SplitEvents(cut.OnEvent(Ev(0, reply, FinishReason::kLength, true)));
  ASSERT_GE(stream.size(), 2u);
  EXPECT_EQ(stream[stream.size() - 2].second["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(stream.back().first, "message_stop");
}

TEST(AnthropicResponderTest, EngineFailureIsAnErrorInAnthropicsShape) {
  const ServerContext ctx = TestContext();
  AnthropicResponder streamed(MakeAnthropicPlan(true), ctx, "msg_5", 0);
  engine::Event event = Ev(0, "", FinishReason::kError, true);
  event.error = "boom";
  const auto stream = SplitEvents(streamed.OnEvent(event));
  EXPECT_EQ(stream.back().first, "error");
  EXPECT_EQ(stream.back().second["error"]["type"], "api_error");
  EXPECT_EQ(stream.back().second["error"]["message"], "boom");

  AnthropicResponder whole(MakeAnthropicPlan(false), ctx, "msg_6", 0);
  whole.OnEvent(event);
  ASSERT_TRUE(whole.failure());
  const json body = json::parse(AnthropicResponder::FailureBody(*whole.failure()));
  EXPECT_EQ(body["type"], "error");
  EXPECT_EQ(body["error"]["message"], "boom");
  EXPECT_EQ(json::parse(AnthropicErrorBody(503, "x"))["error"]["type"], "overloaded_error");
}

}  // namespace
}  // namespace k3::api
