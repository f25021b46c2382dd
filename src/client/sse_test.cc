// SseReader framing checks and ChatStreamAccumulator over hand-written streams.
#include "src/client/sse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/client/openai_stream.h"

namespace k3::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> ReadAll(const std::string& stream, std::vector<std::string>* errors,
                                 size_t step = 0) {
  SseReader reader;
  if (step == 0) {
    reader.Feed(stream);
  } else {
    for (size_t i = 0; i < stream.size(); i += step) reader.Feed(std::string_view(stream).substr(i, step));
  }
  reader.Finish();
  *errors = reader.errors();
  return reader.TakeEvents();
}

TEST(SseReaderTest, WellFormedStreamInAnySplit) {
  const std::string stream =
      ": keep-alive\n\ndata: {\"a\":1}\n\nevent: message\r\ndata: {\"b\":2}\r\n\r\ndata:[DONE]\n\n";
  for (size_t step : {0, 1, 2, 3, 7}) {
    std::vector<std::string> errors;
    EXPECT_THAT(ReadAll(stream, &errors, step), ElementsAre("{\"a\":1}", "{\"b\":2}", "[DONE]")) << step;
    EXPECT_THAT(errors, IsEmpty()) << step;
  }
}

TEST(SseReaderTest, MultiLineDataIsJoined) {
  std::vector<std::string> errors;
  EXPECT_THAT(ReadAll("data: a\ndata: b\n\ndata: [DONE]\n\n", &errors), ElementsAre("a\nb", "[DONE]"));
  EXPECT_THAT(errors, IsEmpty());
}

TEST(SseReaderTest, FramingErrors) {
  std::vector<std::string> errors;
  ReadAll("data: {}\n\n", &errors);
  EXPECT_THAT(errors, ElementsAre("the stream ended without 'data: [DONE]'"));

  ReadAll("data: [DONE]\n\ndata: {}\n\n", &errors);
  EXPECT_THAT(errors, ElementsAre(HasSubstr("event 2: data after [DONE]")));

  ReadAll("{\"raw\": true}\n\ndata: [DONE]\n\n", &errors);
  EXPECT_THAT(errors, ElementsAre(HasSubstr("line 1: not an SSE field")));

  ReadAll("data: {}\n\ndata: [DONE]", &errors);
  ASSERT_FALSE(errors.empty());
  EXPECT_THAT(errors[0], HasSubstr("ended inside a line"));

  ReadAll("data: {}\n\ndata: [DONE]\n", &errors);
  EXPECT_THAT(errors, ElementsAre(HasSubstr("ended inside an event")));
}

TEST(SseReaderTest, MissingBlankLinesMergeEventsIntoNonJson) {
  std::vector<std::string> errors;
  auto events = ReadAll(
      "data: {\"object\":\"chat.completion.chunk\",\"choices\":[]}\n"
      "data: {\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\ndata: [DONE]\n\n",
      &errors);
  EXPECT_THAT(errors, IsEmpty());
  ASSERT_EQ(events.size(), 2u);
  ChatStreamAccumulator acc;
  acc.OnEvent(events[0]);
  EXPECT_THAT(acc.errors(), ElementsAre(HasSubstr("chunk 1: data is not a JSON object")));
}

std::string Chunk(const std::string& delta, const std::string& finish = "null") {
  return R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":)" + delta +
         R"(,"finish_reason":)" + finish + "}]}";
}

TEST(ChatStreamAccumulatorTest, ContentReasoningToolCallsUsage) {
  ChatStreamAccumulator acc;
  EXPECT_FALSE(acc.OnEvent(Chunk(R"({"role":"assistant","content":""})")));
  EXPECT_TRUE(acc.OnEvent(Chunk(R"({"reasoning_content":"hm"})")));
  EXPECT_TRUE(acc.OnEvent(Chunk(R"({"content":"Hel"})")));
  EXPECT_TRUE(acc.OnEvent(Chunk(R"({"content":"lo"})")));
  EXPECT_TRUE(acc.OnEvent(Chunk(
      R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]})")));
  EXPECT_TRUE(acc.OnEvent(Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]})")));
  EXPECT_TRUE(acc.OnEvent(Chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]})")));
  EXPECT_FALSE(acc.OnEvent(Chunk("{}", "\"tool_calls\"")));
  EXPECT_FALSE(acc.usage_chunk_seen());
  EXPECT_FALSE(acc.OnEvent(
      R"({"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":4}}})"));
  EXPECT_FALSE(acc.OnEvent("[DONE]"));
  EXPECT_THAT(acc.errors(), IsEmpty());
  const ChatResult& r = acc.result();
  EXPECT_EQ(r.content, "Hello");
  EXPECT_EQ(r.reasoning, "hm");
  EXPECT_EQ(r.reasoning_field, "reasoning_content");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].id, "call_1");
  EXPECT_EQ(r.tool_calls[0].name, "f");
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  ASSERT_TRUE(r.usage.has_value());
  EXPECT_EQ(r.usage->prompt_tokens, 5);
  EXPECT_EQ(r.usage->completion_tokens, 6);
  EXPECT_EQ(r.usage->cached_tokens, 4);
  EXPECT_TRUE(acc.usage_chunk_seen());
  EXPECT_EQ(acc.chunks(), 9);
}

TEST(ChatStreamAccumulatorTest, ReasoningFieldAndShapeErrors) {
  ChatStreamAccumulator acc;
  EXPECT_TRUE(acc.OnEvent(Chunk(R"({"reasoning":"r"})")));
  EXPECT_EQ(acc.result().reasoning_field, "reasoning");
  acc.OnEvent(R"({"object":"chat.completion","choices":[{"index":0,"delta":{}}]})");
  acc.OnEvent(R"({"error":{"message":"engine died"}})");
  acc.OnEvent(R"({"object":"chat.completion.chunk"})");
  EXPECT_THAT(acc.errors(), ElementsAre(HasSubstr("object is 'chat.completion'"), HasSubstr("engine died"),
                                        HasSubstr("no choices array")));
}

TEST(ParseChatCompletionTest, MessageFields) {
  auto body = nlohmann::json::parse(
      R"({"object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"reasoning":"because",
      "tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"x\":1}"}}]}}],
      "usage":{"prompt_tokens":3,"completion_tokens":2}})");
  auto r = ParseChatCompletion(body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->content, "");
  EXPECT_EQ(r->reasoning, "because");
  EXPECT_EQ(r->reasoning_field, "reasoning");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(r->usage->cached_tokens, -1);
  EXPECT_FALSE(ParseChatCompletion(nlohmann::json::parse(R"({"choices":[]})")).ok());
  EXPECT_THAT(ParseChatCompletion(nlohmann::json::parse(R"({"choices":[{"text":"x"}]})")).status().message(),
              HasSubstr("no message object"));
}

}  // namespace
}  // namespace k3::client
