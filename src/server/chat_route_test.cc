// POST /v1/chat/completions and /v1/completions over a real loopback socket: OpenAiService's routes in
// front of a scripted engine (ScriptedEngine below answers every request with a set reply text, in two
// events), for what the routes add on top of the responders: the end check of structured output (a JSON
// reply or forced tool call that breaks the schema's `not` / `uniqueItems` finishes with
// "schema_violation" and a stop_reason naming the keyword and path, streaming and not; a valid one keeps
// "stop"), stream_options.continuous_usage_stats (usage on every chunk), and /v1/messages' named SSE events
// and Anthropic-shaped errors. The real engine under the openai SDK is tests/compat/vllm_parity (under the
// Anthropic SDK, tests/compat/anthropic).
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/api/api_test_util.h"
#include "src/server/http_server.h"
#include "src/server/openai_service.h"
#include "src/server/testing/http_client.h"

namespace k3::server {
namespace {

using nlohmann::json;

// Answers each request at once, on its own thread, with reply(): the text in two events of one token
// per byte, finish kStop.
class ScriptedEngine final : public engine::Engine {
 public:
  ~ScriptedEngine() override { Join(); }
  void SetReply(std::string reply) {
    std::lock_guard<std::mutex> lock(mu_);
    reply_ = std::move(reply);
  }
  Result<uint64_t> Submit(engine::Request request, engine::EventCallback on_event) override {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = ++submitted_;
    threads_.emplace_back([reply = reply_, prompt = static_cast<int64_t>(request.prompt.size()),
                           on_event = std::move(on_event)] {
      const size_t half = reply.size() / 2;
      const std::string parts[2] = {reply.substr(0, half), reply.substr(half)};
      for (int i = 0; i < 2; ++i) {
        engine::Event e;
        e.text = parts[i];
        e.tokens.assign(parts[i].size(), 'x');
        if (i == 1) {
          e.finish = engine::FinishReason::kStop;
          e.request_done = true;
          e.usage.prompt_tokens = prompt;
          e.usage.completion_tokens = static_cast<int64_t>(reply.size());
        }
        on_event(e);
      }
    });
    return id;
  }
  void Cancel(uint64_t) override {}
  engine::EngineMetrics Metrics() const override { return {}; }
  bool ResetPrefixCache(std::function<void(int64_t)>) override { return false; }
  bool Sleep(std::function<void()>) override { return false; }
  void WakeUp() override {}
  bool IsSleeping() const override { return false; }
  bool Alive() const override { return true; }
  const engine::EngineOptions& options() const override { return options_; }
  void Shutdown(bool) override {}
  void Join() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  std::mutex mu_;
  std::string reply_;
  uint64_t submitted_ = 0;
  std::vector<std::thread> threads_;
  engine::EngineOptions options_;
};

// The end of a constrained JSON reply with thinking off (json_schema_grammar.h).
const std::string kJsonEnd = "<|close|>response<|sep|><|close|>message<|sep|>";

class ChatRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_.SetReady(&engine_, api::testing::TestContext());
    Router router;
    service_.AddRoutes(&router);
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    auto server = HttpServer::Start(options, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_->Stop();
    engine_.Join();
  }
  testing::TestResponse Post(const std::string& path, const json& body) {
    auto r = testing::Fetch(server_->port(), "POST", path, body.dump(), {"Content-Type: application/json"});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : testing::TestResponse{};
  }
  // The JSON payloads of an SSE body ("data: {...}" lines, [DONE] last).
  static std::vector<json> Events(const std::string& body) {
    std::vector<json> out;
    size_t pos = 0;
    bool done = false;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      const size_t end = body.find("\n\n", pos);
      const std::string payload = body.substr(pos + 6, end - pos - 6);
      pos = end;
      if (payload == "[DONE]") {
        done = true;
        continue;
      }
      out.push_back(json::parse(payload));
    }
    EXPECT_TRUE(done) << body;
    return out;
  }
  static json ChatRequest(const json& schema) {
    return {
        {"messages", {{{"role", "user"}, {"content", "tags?"}}}},
        {"chat_template_kwargs", {{"thinking", false}}},
        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", schema}}}}}};
  }

  ScriptedEngine engine_;
  OpenAiService service_{"Kimi-K3", "test"};
  std::unique_ptr<HttpServer> server_;
};

const json kTagsSchema = json::parse(R"({"type": "object", "properties": {"tags": {"type": "array",
    "items": {"type": "string"}, "uniqueItems": true}, "name": {"type": "string", "not": {"const": ""}}},
    "required": ["tags", "name"]})");

TEST_F(ChatRouteTest, SchemaViolationFinishesTheChoice) {
  engine_.SetReply(R"({"name":"n","tags":["a","b","a"]})" + kJsonEnd);
  auto r = Post("/v1/chat/completions", ChatRequest(kTagsSchema));
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  EXPECT_EQ(body["choices"][0]["message"]["content"], R"({"name":"n","tags":["a","b","a"]})");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "schema_violation");
  EXPECT_EQ(body["choices"][0]["stop_reason"], "uniqueItems: /tags items 0 and 2 are equal");

  engine_.SetReply(R"({"name":"","tags":[]})" + kJsonEnd);
  r = Post("/v1/chat/completions", ChatRequest(kTagsSchema));
  ASSERT_EQ(r.status, 200) << r.body;
  body = json::parse(r.body);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "schema_violation");
  EXPECT_EQ(body["choices"][0]["stop_reason"],
            "not: /name matches the schema it must not match (#/properties/name/not)");

  engine_.SetReply(R"({"name":"n","tags":["a","b"]})" + kJsonEnd);
  r = Post("/v1/chat/completions", ChatRequest(kTagsSchema));
  ASSERT_EQ(r.status, 200) << r.body;
  body = json::parse(r.body);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(body["choices"][0]["stop_reason"].is_null());
}

TEST_F(ChatRouteTest, StreamingFinalChunkCarriesTheViolation) {
  engine_.SetReply(R"({"name":"n","tags":["x","x"]})" + kJsonEnd);
  json request = ChatRequest(kTagsSchema);
  request["stream"] = true;
  const auto r = Post("/v1/chat/completions", request);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<json> events = Events(r.body);
  ASSERT_GE(events.size(), 2u);
  std::string content;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& choice = events[i]["choices"][0];
    content += choice["delta"].value("content", "");
    if (i + 1 < events.size()) {
      EXPECT_TRUE(choice["finish_reason"].is_null()) << events[i];
    }
  }
  EXPECT_EQ(content, R"({"name":"n","tags":["x","x"]})");
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "schema_violation");
  EXPECT_EQ(events.back()["choices"][0]["stop_reason"], "uniqueItems: /tags items 0 and 1 are equal");
}

// A forced tool call (tool_choice named) whose arguments break uniqueItems.
TEST_F(ChatRouteTest, ForcedToolCallArgumentsAreChecked) {
  engine_.SetReply(
      "<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"tag\" "
      "index=\"1\"<|sep|><|open|>argument key=\"ids\" "
      "type=\"array\"<|sep|>[7,7]<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"
      "<|close|>message<|sep|>");
  const json request = {
      {"messages", {{{"role", "user"}, {"content", "tag it"}}}},
      {"chat_template_kwargs", {{"thinking", false}}},
      {"tools",
       {{{"type", "function"},
         {"function",
          {{"name", "tag"},
           {"parameters", json::parse(R"({"type": "object", "properties": {"ids": {"type": "array",
               "items": {"type": "integer"}, "uniqueItems": true}}, "required": ["ids"]})")}}}}}},
      {"tool_choice", {{"type", "function"}, {"function", {{"name", "tag"}}}}}};
  const auto r = Post("/v1/chat/completions", request);
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  ASSERT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u) << r.body;
  EXPECT_EQ(body["choices"][0]["finish_reason"], "schema_violation");
  EXPECT_EQ(body["choices"][0]["stop_reason"],
            "uniqueItems: /ids items 0 and 1 are equal (arguments of tool call 0, tag)");
}

TEST_F(ChatRouteTest, ContinuousUsageStatsOnEveryChunk) {
  engine_.SetReply("Hello there" + kJsonEnd);
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    json request = {{"stream", true},
                    {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}};
    if (std::string(path) == "/v1/completions") {
      request["prompt"] = "Say hi";
    } else {
      request["messages"] = {{{"role", "user"}, {"content", "Say hi"}}};
      request["chat_template_kwargs"] = {{"thinking", false}};
    }
    const auto r = Post(path, request);
    ASSERT_EQ(r.status, 200) << path << ": " << r.body;
    const std::vector<json> events = Events(r.body);
    ASSERT_GE(events.size(), 3u) << path;
    int64_t previous = -1;
    int64_t prompt_tokens = -1;
    for (const json& event : events) {
      ASSERT_TRUE(event["usage"].is_object()) << path << ": " << event;
      const json& usage = event["usage"];
      if (prompt_tokens < 0) prompt_tokens = usage["prompt_tokens"];
      EXPECT_EQ(usage["prompt_tokens"], prompt_tokens) << path;
      EXPECT_GT(prompt_tokens, 0) << path;
      EXPECT_GE(usage["completion_tokens"].get<int64_t>(), previous) << path;  // grows chunk by chunk
      previous = usage["completion_tokens"];
      EXPECT_EQ(usage["total_tokens"], usage["prompt_tokens"].get<int64_t>() + previous) << path;
    }
    const auto reply_tokens = static_cast<int64_t>(("Hello there" + kJsonEnd).size());
    EXPECT_EQ(previous, reply_tokens) << path;  // the last (usage-only) chunk: the whole request's
    EXPECT_EQ(events.back()["choices"], json::array()) << path;
  }
  // Without include_usage it has no effect (vLLM): no usage field at all.
  const auto r =
      Post("/v1/completions",
           {{"prompt", "Say hi"}, {"stream", true}, {"stream_options", {{"continuous_usage_stats", true}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  for (const json& event : Events(r.body)) EXPECT_FALSE(event.contains("usage")) << event;
}

// /v1/messages on the wire: named SSE events ("event: NAME" then "data: {...}", no [DONE]) in Anthropic's
// order, the message object when not streamed, and errors (400, 404) in Anthropic's shape.
TEST_F(ChatRouteTest, AnthropicMessagesOnTheWire) {
  engine_.SetReply("<|open|>response<|sep|>Hello there<|close|>response<|sep|><|close|>message<|sep|>");
  json request = {{"model", "Kimi-K3"},
                  {"max_tokens", 64},
                  {"thinking", {{"type", "disabled"}}},
                  {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  auto r = Post("/v1/messages", request);
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["content"], json::parse(R"([{"type": "text", "text": "Hello there"}])"));
  EXPECT_EQ(body["stop_reason"], "end_turn");
  EXPECT_EQ(body["id"].get<std::string>().rfind("msg_", 0), 0u);

  request["stream"] = true;
  r = Post("/v1/messages", request);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos) << r.body;
  std::vector<std::string> names;
  std::string text;
  size_t pos = 0;
  while ((pos = r.body.find("event: ", pos)) != std::string::npos) {
    const size_t line_end = r.body.find('\n', pos);
    names.push_back(r.body.substr(pos + 7, line_end - pos - 7));
    ASSERT_EQ(r.body.compare(line_end + 1, 6, "data: "), 0) << r.body;
    const size_t data_end = r.body.find("\n\n", line_end);
    const json event = json::parse(r.body.substr(line_end + 7, data_end - line_end - 7));
    EXPECT_EQ(event["type"], names.back());
    if (names.back() == "content_block_delta") text += event["delta"]["text"].get<std::string>();
    pos = data_end;
  }
  const std::vector<std::string> expected = {"message_start", "ping", "content_block_start"};
  ASSERT_GE(names.size(), 7u) << r.body;
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 3), expected);
  EXPECT_EQ(names[names.size() - 3], "content_block_stop");
  EXPECT_EQ(names[names.size() - 2], "message_delta");
  EXPECT_EQ(names.back(), "message_stop");
  EXPECT_EQ(text, "Hello there");

  r = Post("/v1/messages", {{"model", "Kimi-K3"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(r.status, 400);
  body = json::parse(r.body);
  EXPECT_EQ(body["type"], "error");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["message"].get<std::string>().rfind("max_tokens", 0), 0u) << r.body;
  r = Post("/v1/messages/count_tokens",
           {{"model", "nope"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "not_found_error");
  r = Post("/v1/messages/count_tokens",
           {{"model", "Kimi-K3"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GT(json::parse(r.body)["input_tokens"].get<int64_t>(), 0);
}

TEST_F(ChatRouteTest, RenderRoutesGiveThePromptWithoutGenerating) {
  const json chat = {
      {"messages", {{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}, {"content", "Once"}}}},
      {"add_generation_prompt", false},
      {"continue_final_message", true}};
  auto r = Post("/v1/chat/completions/render", chat);
  ASSERT_EQ(r.status, 200) << r.body;
  const json rendered = json::parse(r.body);
  const std::string prompt = rendered["prompt"];
  EXPECT_EQ(prompt.substr(prompt.size() - 27), "<|open|>response<|sep|>Once");
  EXPECT_FALSE(rendered["token_ids"].empty());
  EXPECT_EQ(rendered["model"], "Kimi-K3");
  EXPECT_FALSE(rendered["request_id"].get<std::string>().empty());

  json both = chat;
  both["add_generation_prompt"] = true;
  r = Post("/v1/chat/completions/render", both);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "continue_final_message");

  r = Post("/v1/completions/render", {{"prompt", {"hi", "yo"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json prompts = json::parse(r.body);
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[1]["token_ids"], json({'y', 'o'}));
  EXPECT_EQ(prompts[1]["prompt"], "yo");
}

TEST_F(ChatRouteTest, ContinueFinalMessageRepliesWithTheContinuationAsContent) {
  engine_.SetReply(" upon a time.<|close|>response<|sep|><|close|>message<|sep|>");
  const json chat = {
      {"messages",
       {{{"role", "user"}, {"content", "a story"}}, {{"role", "assistant"}, {"content", "Once"}}}},
      {"add_generation_prompt", false},
      {"continue_final_message", true}};
  auto r = Post("/v1/chat/completions", chat);
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = json::parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(message["content"], " upon a time.");
  EXPECT_FALSE(message.contains("reasoning_content") && !message["reasoning_content"].is_null());
}

}  // namespace
}  // namespace k3::server
