// ChatResponder on hand-built engine events: chunk shapes (role first, reasoning / content / tool-call
// deltas, finish reasons, usage chunk, logprobs), n = 2, errors, and the parity property: for every
// way of splitting the output into events, the merged streaming deltas equal the non-streaming body.
#include <random>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"
#include "src/api/openai.h"

namespace k3::api {
namespace {

using engine::FinishReason;
using nlohmann::json;
using testing::Ev;
using testing::ParseAll;
using testing::TestContext;

ChatPlan MakeChatPlan(bool stream, bool thinking = true, bool tools = false, int32_t n = 1) {
  ChatPlan plan;
  plan.model = "Kimi-K3";
  plan.stream = stream;
  plan.parser.thinking = thinking;
  plan.parser.tools_enabled = tools;
  plan.n = n;
  return plan;
}

const std::string kReasoningThenContent =
    "Let me think.<|close|>think<|sep|><|open|>response<|sep|>Hello world.<|close|>response<|sep|>"
    "<|close|>message<|sep|>";
const std::string kTwoCalls =
    "Need weather.<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|>"
    "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" "
    "type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool=\"get_time\" "
    "index=\"2\"<|sep|><|open|>argument key=\"utc\" type=\"boolean\"<|sep|>true<|close|>argument<|sep|>"
    "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>";
// anchors.md §4 item 1: the think close is left out before the tools channel.
const std::string kToolsWithoutThinkClose =
    "Thinking<|open|>tools<|sep|><|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>argument key=\"x\" "
    "type=\"number\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";

// Feeds `chunks` as events of choice 0 (the last one finishing with `finish` and ending the request).
std::vector<std::string> Feed(ChatResponder& responder, const std::vector<std::string>& chunks,
                              FinishReason finish = FinishReason::kStop) {
  std::vector<std::string> out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const bool last = i + 1 == chunks.size();
    engine::Event event = Ev(0, chunks[i], last ? finish : FinishReason::kNone, last);
    if (last) event.usage = {12, 4, 7};
    for (auto& payload : responder.OnEvent(event)) out.push_back(std::move(payload));
  }
  return out;
}

// Merges streamed chunks of one choice into a chat.completion message-like object.
json MergeChoice(const std::vector<json>& chunks, int index) {
  json merged = {
      {"content", ""}, {"reasoning_content", ""}, {"tool_calls", json::array()}, {"finish_reason", nullptr}};
  for (const json& chunk : chunks) {
    for (const json& choice : chunk["choices"]) {
      if (choice["index"] != index) continue;
      const json& delta = choice["delta"];
      if (delta.contains("content"))
        merged["content"] = merged["content"].get<std::string>() + delta["content"].get<std::string>();
      if (delta.contains("reasoning_content"))
        merged["reasoning_content"] =
            merged["reasoning_content"].get<std::string>() + delta["reasoning_content"].get<std::string>();
      for (const json& call : delta.value("tool_calls", json::array())) {
        const size_t at = call["index"].get<size_t>();
        if (at == merged["tool_calls"].size()) {
          json copy = call;
          copy.erase("index");
          merged["tool_calls"].push_back(copy);
        } else {
          merged["tool_calls"][at]["function"]["arguments"] =
              merged["tool_calls"][at]["function"]["arguments"].get<std::string>() +
              call["function"]["arguments"].get<std::string>();
        }
      }
      if (!choice["finish_reason"].is_null()) merged["finish_reason"] = choice["finish_reason"];
    }
  }
  return merged;
}

json BodyAsMerged(const json& body, int index) {
  const json& choice = body["choices"][index];
  const json& message = choice["message"];
  return {{"content", message["content"].is_null() ? "" : message["content"].get<std::string>()},
          {"reasoning_content", message.value("reasoning_content", "")},
          {"tool_calls", message.value("tool_calls", json::array())},
          {"finish_reason", choice["finish_reason"]}};
}

TEST(ChatResponderTest, ReasoningThenContentStreaming) {
  const ServerContext ctx = TestContext();
  ChatResponder responder(MakeChatPlan(true), ctx, "chatcmpl-1", 42);
  const auto chunks =
      ParseAll(Feed(responder, {"Let me ", "think.<|close|>think<|sep|><|open|>resp", "onse<|sep|>Hello",
                                " world.<|close|>response<|sep|><|close|>message<|sep|>"}));
  ASSERT_GE(chunks.size(), 4u);
  EXPECT_EQ(chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks[0]["id"], "chatcmpl-1");
  EXPECT_EQ(chunks[0]["created"], 42);
  EXPECT_EQ(chunks[0]["model"], "Kimi-K3");
  EXPECT_EQ(chunks[0]["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(chunks[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(chunks[0].contains("usage"));  // only with include_usage
  EXPECT_EQ(chunks[1]["choices"][0]["delta"],
            json({{"reasoning_content", "Let me "}, {"reasoning", "Let me "}}));
  for (const json& chunk : chunks) {
    const json& delta = chunk["choices"][0]["delta"];
    for (const char* field : {"content", "reasoning_content"}) {
      if (!delta.contains(field)) continue;
      const std::string text = delta[field];
      EXPECT_EQ(text.find("<|"), std::string::npos) << text;
      if (&chunk != &chunks[0]) {
        EXPECT_FALSE(text.empty()) << "empty delta field " << field;
      }
    }
  }
  const json merged = MergeChoice(chunks, 0);
  EXPECT_EQ(merged["reasoning_content"], "Let me think.");
  EXPECT_EQ(merged["content"], "Hello world.");
  EXPECT_EQ(merged["finish_reason"], "stop");
  EXPECT_EQ(chunks.back()["choices"][0]["stop_reason"], nullptr);
}

TEST(ChatResponderTest, NonStreamingBody) {
  const ServerContext ctx = TestContext();
  ChatResponder responder(MakeChatPlan(false), ctx, "chatcmpl-2", 7);
  EXPECT_TRUE(Feed(responder, {kReasoningThenContent}).empty());
  const json body = json::parse(responder.FinalBody());
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["id"], "chatcmpl-2");
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Hello world.");
  EXPECT_EQ(choice["message"]["reasoning_content"], "Let me think.");
  EXPECT_EQ(choice["message"]["reasoning"], "Let me think.");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_TRUE(choice["logprobs"].is_null());
  EXPECT_EQ(body["usage"], json({{"prompt_tokens", 12},
                                 {"completion_tokens", 7},
                                 {"total_tokens", 19},
                                 {"prompt_tokens_details", {{"cached_tokens", 4}}}}));
}

TEST(ChatResponderTest, ThinkingOffAndIncludeReasoningFalseHaveNoReasoningField) {
  const ServerContext ctx = TestContext();
  ChatResponder off(MakeChatPlan(false, /*thinking=*/false), ctx, "c", 0);
  Feed(off, {"Hi there<|close|>response<|sep|>"});
  json body = json::parse(off.FinalBody());
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hi there");
  EXPECT_FALSE(body["choices"][0]["message"].contains("reasoning_content"));

  ChatPlan plan = MakeChatPlan(true);
  plan.include_reasoning = false;
  ChatResponder hidden(plan, ctx, "c", 0);
  const auto chunks = ParseAll(Feed(hidden, {kReasoningThenContent}));
  for (const json& chunk : chunks) EXPECT_FALSE(chunk["choices"][0]["delta"].contains("reasoning_content"));
  EXPECT_EQ(MergeChoice(chunks, 0)["content"], "Hello world.");

  ServerContext no_alias = TestContext();
  no_alias.reasoning_alias = false;
  ChatResponder plain(MakeChatPlan(false), no_alias, "c", 0);
  Feed(plain, {kReasoningThenContent});
  body = json::parse(plain.FinalBody());
  EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "Let me think.");
  EXPECT_FALSE(body["choices"][0]["message"].contains("reasoning"));
}

// `k3 serve --reasoning-parser none` (vLLM without --reasoning-parser): the reasoning stays in content.
TEST(ChatResponderTest, WithoutReasoningParserReasoningStaysInContent) {
  ServerContext ctx = TestContext();
  ctx.reasoning_parser = false;
  ChatResponder plain(MakeChatPlan(false), ctx, "c", 0);
  Feed(plain, {kReasoningThenContent});
  const json message = json::parse(plain.FinalBody())["choices"][0]["message"];
  EXPECT_EQ(message["content"], "Let me think.Hello world.");
  EXPECT_FALSE(message.contains("reasoning_content"));
  EXPECT_FALSE(message.contains("reasoning"));

  ChatResponder streaming(MakeChatPlan(true), ctx, "c", 0);
  const auto chunks =
      ParseAll(Feed(streaming, {"Let me ", "think.<|close|>think<|sep|><|open|>response<|sep|>",
                                "Hello world.<|close|>response<|sep|><|close|>message<|sep|>"}));
  for (const json& chunk : chunks) {
    if (chunk["choices"].empty()) continue;
    EXPECT_FALSE(chunk["choices"][0]["delta"].contains("reasoning_content"));
    EXPECT_FALSE(chunk["choices"][0]["delta"].contains("reasoning"));
  }
  EXPECT_EQ(MergeChoice(chunks, 0)["content"], "Let me think.Hello world.");
}

TEST(ChatResponderTest, ToolCallsSplitAcrossEvents) {
  const ServerContext ctx = TestContext();
  std::vector<std::string> pieces;
  for (size_t i = 0; i < kTwoCalls.size(); i += 7) pieces.push_back(kTwoCalls.substr(i, 7));
  ChatResponder streaming(MakeChatPlan(true, true, /*tools=*/true), ctx, "chatcmpl-t", 1);
  const auto chunks = ParseAll(Feed(streaming, pieces));
  std::vector<json> call_deltas;
  for (const json& chunk : chunks) {
    for (const json& call : chunk["choices"][0]["delta"].value("tool_calls", json::array()))
      call_deltas.push_back(call);
  }
  ASSERT_EQ(call_deltas.size(), 2u);
  EXPECT_EQ(call_deltas[0]["index"], 0);
  EXPECT_EQ(call_deltas[1]["index"], 1);
  for (const json& call : call_deltas) {
    EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_"));
    EXPECT_EQ(call["id"].get<std::string>().size(), 29u);
    EXPECT_EQ(call["type"], "function");
  }
  EXPECT_NE(call_deltas[0]["id"], call_deltas[1]["id"]);
  EXPECT_EQ(call_deltas[0]["function"],
            json({{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}));
  EXPECT_EQ(call_deltas[1]["function"], json({{"name", "get_time"}, {"arguments", R"({"utc":true})"}}));
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "tool_calls");

  ChatResponder whole(MakeChatPlan(false, true, true), ctx, "chatcmpl-t", 1);
  Feed(whole, {kTwoCalls});
  const json body = json::parse(whole.FinalBody());
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Checking.");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(BodyAsMerged(body, 0), MergeChoice(chunks, 0));  // same ids too
}

TEST(ChatResponderTest, ContentIsNullWithOnlyToolCallsAndLengthKeepsReasoning) {
  const ServerContext ctx = TestContext();
  ChatResponder responder(MakeChatPlan(false, true, true), ctx, "c", 0);
  Feed(responder, {kToolsWithoutThinkClose});
  json body = json::parse(responder.FinalBody());
  EXPECT_TRUE(body["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "Thinking");
  EXPECT_EQ(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], R"({"x":3})");

  // anchors.md §4 item 6: cut off by max_tokens inside think: reasoning kept, content empty.
  ChatResponder cut(MakeChatPlan(false), ctx, "c", 0);
  Feed(cut, {"still ", "thinking"}, FinishReason::kLength);
  body = json::parse(cut.FinalBody());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "");
  EXPECT_EQ(body["choices"][0]["message"]["reasoning_content"], "still thinking");
}

TEST(ChatResponderTest, TwoChoicesInterleaved) {
  const ServerContext ctx = TestContext();
  ChatResponder responder(MakeChatPlan(true, false, false, /*n=*/2), ctx, "c", 0);
  std::vector<std::string> payloads;
  auto feed = [&](engine::Event event) {
    for (auto& p : responder.OnEvent(event)) payloads.push_back(std::move(p));
  };
  feed(Ev(1, "B1 "));
  feed(Ev(0, "A1 "));
  feed(Ev(1, "B2", FinishReason::kLength));
  engine::Event last = Ev(0, "A2<|close|>response<|sep|>", FinishReason::kStop, true);
  last.usage = {5, 0, 4};
  feed(last);
  const auto chunks = ParseAll(payloads);
  // Role chunks for both choices come first.
  EXPECT_EQ(chunks[0]["choices"][0]["index"], 0);
  EXPECT_EQ(chunks[1]["choices"][0]["index"], 1);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunks[1]["choices"][0]["delta"]["role"], "assistant");
  for (const json& chunk : chunks) EXPECT_EQ(chunk["choices"].size(), 1u);
  EXPECT_EQ(MergeChoice(chunks, 0)["content"], "A1 A2");
  EXPECT_EQ(MergeChoice(chunks, 0)["finish_reason"], "stop");
  EXPECT_EQ(MergeChoice(chunks, 1)["content"], "B1 B2");
  EXPECT_EQ(MergeChoice(chunks, 1)["finish_reason"], "length");
}

TEST(ChatResponderTest, IncludeUsageAddsAFinalUsageChunk) {
  const ServerContext ctx = TestContext();
  ChatPlan plan = MakeChatPlan(true);
  plan.include_usage = true;
  ChatResponder responder(plan, ctx, "c", 0);
  const auto chunks = ParseAll(Feed(responder, {"a", "b<|close|>think<|sep|>c"}));
  ASSERT_GE(chunks.size(), 3u);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    ASSERT_TRUE(chunks[i].contains("usage"));
    EXPECT_TRUE(chunks[i]["usage"].is_null());
    EXPECT_EQ(chunks[i]["choices"].size(), 1u);
  }
  const json& last = chunks.back();
  EXPECT_EQ(last["choices"], json::array());
  EXPECT_EQ(last["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(last["usage"]["completion_tokens"], 7);
  EXPECT_EQ(last["usage"]["total_tokens"], 19);
  EXPECT_EQ(last["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
}

engine::TokenLogprob Lp(int32_t token, float logprob, std::vector<engine::TopLogprob> top = {}) {
  return {token, logprob, std::move(top)};
}

TEST(ChatResponderTest, LogprobsRideWithTheirTextAndNoneAreLost) {
  const ServerContext ctx = TestContext();
  ChatPlan plan = MakeChatPlan(true, /*thinking=*/false);
  plan.logprobs = true;
  plan.top_logprobs = 1;
  ChatResponder streaming(plan, ctx, "c", 0);
  plan.stream = false;
  ChatResponder whole(plan, ctx, "c", 0);
  // "Hi" then "<|clo" (held back by the parser: maybe a marker) then "se|>" ... ends the response.
  std::vector<engine::Event> events = {Ev(0, "Hi"), Ev(0, "<|clo"), Ev(0, "x", FinishReason::kStop, true)};
  events[0].logprobs = {Lp('H', -0.5f, {{'H', -0.5f}}), Lp('i', -1.0f, {{'i', -1.0f}})};
  events[1].logprobs = {Lp('<', -2.0f, {{'<', -2.0f}})};
  events[2].logprobs = {Lp(0xC3, -std::numeric_limits<float>::infinity(), {{0xC3, -3.0f}})};
  std::vector<std::string> payloads;
  for (const auto& event : events) {
    for (auto& p : streaming.OnEvent(event)) payloads.push_back(std::move(p));
    whole.OnEvent(event);
  }
  const auto chunks = ParseAll(payloads);
  json streamed = json::array();
  for (size_t i = 1; i < chunks.size(); ++i) {
    for (const json& entry : chunks[i]["choices"][0]["logprobs"]["content"]) streamed.push_back(entry);
  }
  const json body = json::parse(whole.FinalBody());
  const json& all = body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(streamed, all);
  EXPECT_EQ(all[0], json({{"token", "H"},
                          {"logprob", -0.5},
                          {"bytes", {72}},
                          {"top_logprobs", {{{"token", "H"}, {"logprob", -0.5}, {"bytes", {72}}}}}}));
  EXPECT_EQ(all[3]["token"], "\xEF\xBF\xBD");  // a lone byte of a UTF-8 character: U+FFFD, raw bytes kept
  EXPECT_EQ(all[3]["bytes"], json({0xC3}));
  EXPECT_EQ(all[3]["logprob"], -9999.0);
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hi<|clox");
}

TEST(ChatResponderTest, ResponseRoleAndTokensAsTokenIds) {
  ServerContext ctx = TestContext();
  ctx.response_role = "model";
  ctx.return_tokens_as_token_ids = true;
  ChatPlan plan = MakeChatPlan(true, /*thinking=*/false);
  plan.logprobs = true;
  plan.top_logprobs = 1;
  ChatResponder streaming(plan, ctx, "c", 0);
  plan.stream = false;
  ChatResponder whole(plan, ctx, "c", 0);
  engine::Event event = Ev(0, "H", FinishReason::kStop, true);
  event.logprobs = {Lp('H', -0.5f, {{'H', -0.5f}})};
  const auto chunks = ParseAll(streaming.OnEvent(event));
  whole.OnEvent(event);
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "model");
  const json body = json::parse(whole.FinalBody());
  EXPECT_EQ(body["choices"][0]["message"]["role"], "model");
  const json& entry = body["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["token"], "token_id:72");
  EXPECT_EQ(entry["bytes"], json({'t', 'o', 'k', 'e', 'n', '_', 'i', 'd', ':', '7', '2'}));
  EXPECT_EQ(entry["top_logprobs"][0]["token"], "token_id:72");
}

TEST(ChatResponderTest, StopReasonIsTyped) {
  const ServerContext ctx = TestContext();
  ChatPlan plan = MakeChatPlan(false, false);
  plan.stop = {"END"};
  plan.stop_token_ids = {300};
  for (const auto& [reason, expected] : std::vector<std::pair<std::string, json>>{
           {"END", "END"}, {"300", 300}, {"", nullptr}, {"258", nullptr}}) {
    ChatResponder responder(plan, ctx, "c", 0);
    engine::Event event = Ev(0, "x", FinishReason::kStop, true);
    event.stop_reason = reason;
    responder.OnEvent(event);
    EXPECT_EQ(json::parse(responder.FinalBody())["choices"][0]["stop_reason"], expected) << reason;
  }
}

TEST(ChatResponderTest, EngineErrorBecomesAFailure) {
  const ServerContext ctx = TestContext();
  ChatResponder responder(MakeChatPlan(true), ctx, "c", 0);
  engine::Event event = Ev(0, "", FinishReason::kError, true);
  event.error = "out of cache";
  const auto payloads = ParseAll(responder.OnEvent(event));
  ASSERT_TRUE(responder.failure());
  EXPECT_EQ(responder.failure()->http_status, 500);
  bool saw_error = false;
  for (const json& payload : payloads) {
    if (payload.contains("error")) {
      saw_error = true;
      EXPECT_EQ(payload["error"]["message"], "out of cache");
    }
  }
  EXPECT_TRUE(saw_error);
}

TEST(ChatResponderTest, StreamingEqualsNonStreamingForEveryChunking) {
  const ServerContext ctx = TestContext();
  const std::vector<std::pair<std::string, bool>> outputs = {
      {kReasoningThenContent, false},
      {kTwoCalls, true},
      {kToolsWithoutThinkClose, true},
      {"<|open|>think<|sep|>r<|close|>think<|sep|>c", false},
      {"abc<|close|>think", true}};
  std::mt19937 rng(1234);
  for (const auto& [text, tools] : outputs) {
    std::vector<std::vector<std::string>> chunkings = {{text}};
    std::vector<std::string> chars;
    for (char c : text) chars.emplace_back(1, c);
    chunkings.push_back(chars);
    for (int r = 0; r < 20; ++r) {
      std::vector<std::string> pieces;
      for (size_t i = 0; i < text.size();) {
        const size_t len = 1 + rng() % 12;
        pieces.push_back(text.substr(i, len));
        i += len;
      }
      chunkings.push_back(pieces);
    }
    ChatResponder whole(MakeChatPlan(false, true, tools), ctx, "chatcmpl-p", 0);
    Feed(whole, {text});
    const json expected = BodyAsMerged(json::parse(whole.FinalBody()), 0);
    for (const auto& pieces : chunkings) {
      ChatResponder streaming(MakeChatPlan(true, true, tools), ctx, "chatcmpl-p", 0);
      EXPECT_EQ(MergeChoice(ParseAll(Feed(streaming, pieces)), 0), expected) << text;
      ChatResponder split(MakeChatPlan(false, true, tools), ctx, "chatcmpl-p", 0);
      Feed(split, pieces);
      EXPECT_EQ(BodyAsMerged(json::parse(split.FinalBody()), 0), expected) << text;
    }
  }
}

// The end check: a choice that stops normally with a value that breaks what the grammar left to the end
// (`uniqueItems` here) finishes with "schema_violation" and the violation as stop_reason, streaming (on
// the final chunk) and not; a valid value, or one cut at length, keeps its finish reason.
TEST(ChatResponderTest, SchemaViolationIsTheFinishReason) {
  const ServerContext ctx = TestContext();
  ChatPlan plan = MakeChatPlan(false, /*thinking=*/false);
  plan.schema_check = chat::OutputSchemaCheck::ForJson(
      {{"type", "array"}, {"items", {{"type", "string"}}}, {"uniqueItems", true}});
  ASSERT_NE(plan.schema_check, nullptr);
  const std::string end = "<|close|>response<|sep|><|close|>message<|sep|>";
  for (const auto& [text, finish, reason, stop_reason] :
       std::vector<std::tuple<std::string, FinishReason, json, json>>{
           {R"(["a","b","a"])", FinishReason::kStop, "schema_violation",
            "uniqueItems: / items 0 and 2 are equal"},
           {R"(["a","b"])", FinishReason::kStop, "stop", nullptr},
           {R"(["a","a")", FinishReason::kLength, "length", nullptr}}) {
    ChatResponder whole(plan, ctx, "c", 0);
    Feed(whole, {text.substr(0, 5), text.substr(5) + (finish == FinishReason::kStop ? end : "")}, finish);
    const json body = json::parse(whole.FinalBody());
    EXPECT_EQ(body["choices"][0]["message"]["content"], text);
    EXPECT_EQ(body["choices"][0]["finish_reason"], reason) << text;
    EXPECT_EQ(body["choices"][0]["stop_reason"], stop_reason) << text;

    plan.stream = true;
    ChatResponder streaming(plan, ctx, "c", 0);
    plan.stream = false;
    const auto chunks = ParseAll(Feed(
        streaming, {text.substr(0, 5), text.substr(5) + (finish == FinishReason::kStop ? end : "")}, finish));
    ASSERT_GE(chunks.size(), 2u);
    for (size_t i = 0; i + 1 < chunks.size(); ++i)
      EXPECT_TRUE(chunks[i]["choices"][0]["finish_reason"].is_null());
    EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], reason) << text;
    EXPECT_EQ(chunks.back()["choices"][0]["stop_reason"], stop_reason) << text;
  }
  // Cut by a stop string (or stop token id): not a finished value, not checked.
  plan.stop = {"X"};
  ChatResponder cut(plan, ctx, "c", 0);
  engine::Event event = Ev(0, R"(["a","a"])", FinishReason::kStop, true);
  event.stop_reason = "X";
  cut.OnEvent(event);
  const json body = json::parse(cut.FinalBody());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["choices"][0]["stop_reason"], "X");
}

// Forced tool calls: each call's arguments are checked against its function's parameters; a violation
// replaces finish_reason "tool_calls" and names the call.
TEST(ChatResponderTest, ToolCallArgumentsAreCheckedAtTheEnd) {
  const ServerContext ctx = TestContext();
  ChatPlan plan = MakeChatPlan(false, /*thinking=*/false, /*tools=*/true);
  plan.schema_check = chat::OutputSchemaCheck::ForToolCalls(json::parse(R"([{"type": "function", "function": {
      "name": "tag", "parameters": {"type": "object", "properties": {"ids": {"type": "array",
      "items": {"type": "integer"}, "uniqueItems": true}}}}}])"),
                                                            "tag");
  ASSERT_NE(plan.schema_check, nullptr);
  const auto call = [](const std::string& ids) {
    return "<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"tag\" index=\"1\"<|sep|>"
           "<|open|>argument key=\"ids\" type=\"array\"<|sep|>" +
           ids + "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>";
  };
  ChatResponder duplicate(plan, ctx, "c", 0);
  Feed(duplicate, {call("[4,4]")});
  json body = json::parse(duplicate.FinalBody());
  ASSERT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "schema_violation");
  EXPECT_EQ(body["choices"][0]["stop_reason"],
            "uniqueItems: /ids items 0 and 1 are equal (arguments of tool call 0, tag)");
  ChatResponder distinct(plan, ctx, "c", 0);
  Feed(distinct, {call("[4,5]")});
  body = json::parse(distinct.FinalBody());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(body["choices"][0]["stop_reason"].is_null());
}

// stream_options.continuous_usage_stats: every chunk carries the prompt tokens and the tokens its choice
// generated so far (the role chunks 0); the last usage chunk is the request's, as with include_usage.
TEST(ChatResponderTest, ContinuousUsageOnEveryChunk) {
  const ServerContext ctx = TestContext();
  ChatPlan plan = MakeChatPlan(true, /*thinking=*/false, false, /*n=*/2);
  plan.include_usage = true;
  plan.continuous_usage = true;
  plan.prompt_tokens = 12;
  ChatResponder responder(plan, ctx, "c", 0);
  std::vector<engine::Event> events = {Ev(0, "ab"), Ev(1, "x"), Ev(0, "c", FinishReason::kStop),
                                       Ev(1, "yz", FinishReason::kStop, true)};
  events[0].tokens = {'a', 'b'};
  events[1].tokens = {'x'};
  events[2].tokens = {'c'};
  events[3].tokens = {'y', 'z'};
  events[3].usage = {12, 0, 6};
  std::vector<std::string> payloads;
  for (const auto& event : events) {
    for (auto& p : responder.OnEvent(event)) payloads.push_back(std::move(p));
  }
  const auto chunks = ParseAll(payloads);
  ASSERT_EQ(chunks.size(), 7u);  // 2 role chunks, 4 event chunks, the usage chunk
  const auto usage = [](int64_t completion) {
    return json{{"prompt_tokens", 12}, {"completion_tokens", completion}, {"total_tokens", 12 + completion}};
  };
  EXPECT_EQ(chunks[0]["usage"], usage(0));
  EXPECT_EQ(chunks[1]["usage"], usage(0));
  EXPECT_EQ(chunks[2]["usage"], usage(2));  // choice 0 after "ab"
  EXPECT_EQ(chunks[3]["usage"], usage(1));  // choice 1 after "x"
  EXPECT_EQ(chunks[4]["usage"], usage(3));
  EXPECT_EQ(chunks[5]["usage"], usage(3));
  EXPECT_EQ(chunks[6]["choices"], json::array());
  EXPECT_EQ(chunks[6]["usage"]["completion_tokens"], 6);
}

}  // namespace
}  // namespace k3::api
