// /v1/completions: request validation (prompt forms, echo, legacy logprobs, context) and
// CompletionResponder output, streaming and not.
#include <string>

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

TEST(CompletionRequestTest, PromptForms) {
  const ServerContext ctx = TestContext();
  ApiError error;
  auto text = ParseCompletion(R"({"model": "Kimi-K3", "prompt": "ab<|open|>"})", ctx, &error);
  ASSERT_TRUE(text) << error.message;
  ASSERT_EQ(text->prompts.size(), 1u);
  EXPECT_EQ(text->prompts[0].ids, (std::vector<int32_t>{'a', 'b', 256 + 3}));  // specials allowed
  EXPECT_EQ(text->prompts[0].text, "ab<|open|>");
  EXPECT_EQ(text->request.sampling.max_tokens, 16);  // the legacy default
  EXPECT_EQ(text->request.sampling.logprobs, -1);

  auto ids =
      ParseCompletion(R"({"prompt": [104, 105], "max_tokens": 5, "logprobs": 2, "n": 2})", ctx, &error);
  ASSERT_TRUE(ids) << error.message;
  ASSERT_EQ(ids->prompts.size(), 1u);
  EXPECT_EQ(ids->prompts[0].ids, (std::vector<int32_t>{104, 105}));
  EXPECT_EQ(ids->prompts[0].text, "hi");
  EXPECT_EQ(ids->request.sampling.logprobs, 2);
  EXPECT_EQ(ids->n, 2);
  EXPECT_EQ(ids->request.eos_token_ids, std::vector<int32_t>{testing::kEndOfMsg});

  auto batch_of_one = ParseCompletion(R"({"prompt": ["hi"]})", ctx, &error);
  ASSERT_TRUE(batch_of_one) << error.message;
  ASSERT_EQ(batch_of_one->prompts.size(), 1u);
  EXPECT_EQ(batch_of_one->prompts[0].text, "hi");

  // A batch (lm-eval's local-completions sends lists of token-id lists): one engine request per prompt.
  auto batch = ParseCompletion(R"({"prompt": ["hi", [97, 98, 99], "xy"], "n": 2, "max_tokens": 3,
                                   "echo": true, "logprobs": 1})",
                               ctx, &error);
  ASSERT_TRUE(batch) << error.message;
  ASSERT_EQ(batch->prompts.size(), 3u);
  EXPECT_EQ(batch->prompts[1].text, "abc");
  EXPECT_EQ(batch->prompt_tokens, 2 + 3 + 2);
  EXPECT_EQ(batch->request.sampling.prompt_logprobs, 1);  // echo + logprobs: the prompt's logprobs too
  const std::vector<engine::Request> requests = CompletionRequests(&*batch);
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].prompt, (std::vector<int32_t>{97, 98, 99}));
  for (const engine::Request& r : requests) {
    EXPECT_EQ(r.sampling.n, 2);
    EXPECT_EQ(r.sampling.max_tokens, 3);
    EXPECT_EQ(r.eos_token_ids, std::vector<int32_t>{testing::kEndOfMsg});
  }
  auto with_prompt_logprobs = ParseCompletion(R"({"prompt": "hi", "prompt_logprobs": 2})", ctx, &error);
  ASSERT_TRUE(with_prompt_logprobs) << error.message;
  EXPECT_EQ(with_prompt_logprobs->request.sampling.prompt_logprobs, 2);
  EXPECT_EQ(with_prompt_logprobs->request.sampling.logprobs, -1);
}

TEST(CompletionRequestTest, MalformedRequests) {
  const std::vector<std::tuple<std::string, int, std::string, std::string>> cases = {
      {R"({"prompt": "x", "model": "other"})", 404, "model", "does not exist"},
      {R"({"model": "Kimi-K3"})", 400, "prompt", "required"},
      {R"({"prompt": ""})", 400, "prompt", "must not be empty"},
      {R"({"prompt": 5})", 400, "prompt", "expected a string or an array of token ids"},
      {R"({"prompt": [1, 99999]})", 400, "prompt[1]", "token id in [0, 511]"},
      {R"({"prompt": ["a", 5]})", 400, "prompt[1]", "expected a string or an array of token ids"},
      {R"({"prompt": [[1], []]})", 400, "prompt[1]", "must not be empty"},
      {R"({"prompt": [[1], [2, -1]]})", 400, "prompt[1][1]", "token id in [0, 511]"},
      {R"({"prompt": "x", "suffix": "y"})", 400, "suffix", "not supported"},
      {R"({"prompt": "x", "logprobs": 21})", 400, "logprobs", "[0, 20]"},
      {R"({"prompt": "x", "logprobs": true})", 400, "logprobs", "expected an integer"},
      {R"({"prompt": "x", "max_tokens": 5000})", 400, "max_tokens", "maximum context length is 4096"},
      {R"({"prompt": "x", "temperature": "warm"})", 400, "temperature", "expected a number"},
      {R"({"prompt": "x", "guided_json": {"type": "object"}})", 400, "guided_json", "chat/completions only"},
      {R"({"prompt": "x", "guided_choice": ["a"]})", 400, "guided_choice", "chat/completions only"},
      {R"({"prompt": "x", "prompt_logprobs": 2, "stream": true})", 400, "prompt_logprobs",
       "`stream` is true"},
      {R"({"prompt": "x", "prompt_logprobs": 21})", 400, "prompt_logprobs", "[0, 20]"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", 400, "stream_options",
       "only be given when `stream` is true"},
  };
  for (const auto& [body, status, param, part] : cases) {
    ApiError error;
    EXPECT_FALSE(ParseCompletion(body, TestContext(), &error)) << body;
    EXPECT_EQ(error.http_status, status) << body;
    EXPECT_EQ(error.param, param) << body;
    EXPECT_NE(error.message.find(part), std::string::npos) << body << " -> " << error.message;
  }
}

TEST(CompletionRequestTest, TooManyPromptsIsOneError) {
  json body = {{"prompt", json::array()}};
  for (size_t i = 0; i <= kMaxCompletionPrompts; ++i) body["prompt"].push_back("p");
  ApiError error;
  EXPECT_FALSE(ParseCompletion(body.dump(), TestContext(), &error));
  EXPECT_EQ(error.param, "prompt");
  EXPECT_NE(error.message.find("at most 256 prompts"), std::string::npos) << error.message;
}

CompletionPlan MakeCompletionPlan(bool stream, bool echo = false, int32_t logprobs = -1) {
  CompletionPlan plan;
  plan.model = "Kimi-K3";
  plan.stream = stream;
  plan.echo = echo;
  plan.prompts = {{{'Q', ':', ' '}, "Q: "}};
  plan.logprobs = logprobs;
  return plan;
}

TEST(CompletionResponderTest, StreamingChunksConcatenateToTheBody) {
  const ServerContext ctx = TestContext();
  CompletionPlan plan = MakeCompletionPlan(true, /*echo=*/true, /*logprobs=*/0);
  plan.include_usage = true;
  CompletionResponder streaming(plan, ctx, "cmpl-1", 3);
  plan.stream = false;
  CompletionResponder whole(plan, ctx, "cmpl-1", 3);
  std::vector<engine::Event> events = {Ev(0, "ab"), Ev(0, "c", FinishReason::kLength, true)};
  events[0].logprobs = {{'a', -0.1f, {}}, {'b', -0.2f, {}}};
  events[0].prompt_logprobs = {{':', -1.5f, {}}, {' ', -2.5f, {}}};  // of prompt tokens 1 and 2
  events[1].logprobs = {{'c', -0.3f, {}}};
  events[1].usage = {3, 0, 3};
  std::vector<std::string> payloads;
  for (const auto& event : events) {
    for (auto& p : streaming.OnEvent(event)) payloads.push_back(std::move(p));
    EXPECT_TRUE(whole.OnEvent(event).empty());
  }
  const auto chunks = ParseAll(payloads);
  ASSERT_EQ(chunks.size(), 3u);
  std::string text;
  json tokens = json::array();
  json offsets = json::array();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(chunks[i]["object"], "text_completion");
    EXPECT_TRUE(chunks[i]["usage"].is_null());
    text += chunks[i]["choices"][0]["text"].get<std::string>();
    for (const auto& t : chunks[i]["choices"][0]["logprobs"]["tokens"]) tokens.push_back(t);
    for (const auto& o : chunks[i]["choices"][0]["logprobs"]["text_offset"]) offsets.push_back(o);
  }
  EXPECT_EQ(chunks[1]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(chunks[2]["choices"], json::array());
  EXPECT_EQ(chunks[2]["usage"]["total_tokens"], 6);

  const json body = json::parse(whole.FinalBody());
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "Q: abc");
  EXPECT_EQ(text, "Q: abc");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  // echo + logprobs: the prompt's tokens first (the first without a logprob), then the generated ones.
  EXPECT_EQ(body["choices"][0]["logprobs"]["tokens"], json({"Q", ":", " ", "a", "b", "c"}));
  EXPECT_EQ(body["choices"][0]["logprobs"]["tokens"], tokens);
  EXPECT_EQ(body["choices"][0]["logprobs"]["text_offset"], json({0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(body["choices"][0]["logprobs"]["text_offset"], offsets);
  EXPECT_TRUE(body["choices"][0]["logprobs"]["token_logprobs"][0].is_null());
  EXPECT_TRUE(body["choices"][0]["logprobs"]["top_logprobs"][0].is_null());
  EXPECT_EQ(body["choices"][0]["logprobs"]["token_logprobs"][1], -1.5f);
  EXPECT_EQ(body["choices"][0]["logprobs"]["top_logprobs"][2], json({{" ", -2.5f}}));
  EXPECT_EQ(body["choices"][0]["logprobs"]["token_logprobs"][5], -0.3f);
  EXPECT_FALSE(body["choices"][0].contains("prompt_logprobs"));  // not asked for
  EXPECT_EQ(body["usage"]["prompt_tokens"], 3);
  EXPECT_FALSE(body.contains("system_fingerprint"));
}

// stream_options.continuous_usage_stats: every chunk carries its prompt's tokens and its choice's tokens
// so far (vLLM); the final usage chunk stays the request's.
TEST(CompletionResponderTest, ContinuousUsageOnEveryChunk) {
  const ServerContext ctx = TestContext();
  CompletionPlan plan = MakeCompletionPlan(true);
  plan.include_usage = true;
  plan.continuous_usage = true;
  CompletionResponder responder(plan, ctx, "cmpl-1", 3);
  std::vector<engine::Event> events = {Ev(0, "ab"), Ev(0, "c", FinishReason::kStop, true)};
  events[0].tokens = {'a', 'b'};
  events[1].tokens = {'c'};
  events[1].usage = {3, 0, 3};
  std::vector<std::string> payloads;
  for (const auto& event : events) {
    for (auto& p : responder.OnEvent(event)) payloads.push_back(std::move(p));
  }
  const auto chunks = ParseAll(payloads);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]["usage"], json({{"prompt_tokens", 3}, {"completion_tokens", 2}, {"total_tokens", 5}}));
  EXPECT_EQ(chunks[1]["usage"], json({{"prompt_tokens", 3}, {"completion_tokens", 3}, {"total_tokens", 6}}));
  EXPECT_EQ(chunks[2]["choices"], json::array());
  EXPECT_EQ(chunks[2]["usage"]["total_tokens"], 6);
  // Without it the chunks carry "usage": null, as before.
  plan.continuous_usage = false;
  CompletionResponder plain(plan, ctx, "cmpl-1", 3);
  EXPECT_TRUE(json::parse(plain.OnEvent(events[0]).at(0))["usage"].is_null());
}

// Several prompts: choice index = prompt * n + i, each echoing its own prompt; vLLM's prompt_logprobs per
// choice, {id: {logprob, rank, decoded_token}} with the prompt token and the top k.
TEST(CompletionResponderTest, SeveralPromptsAndPromptLogprobs) {
  const ServerContext ctx = TestContext();
  CompletionPlan plan = MakeCompletionPlan(false, /*echo=*/true);
  plan.prompts = {{{'a', 'b'}, "ab"}, {{'x', 'y'}, "xy"}};
  plan.n = 2;
  plan.prompt_logprobs = 1;
  CompletionResponder responder(plan, ctx, "cmpl", 0);
  for (int32_t choice = 0; choice < 4; ++choice) {
    engine::Event event = Ev(choice, std::to_string(choice), FinishReason::kLength, choice == 3);
    const int32_t second = choice < 2 ? 'b' : 'y';
    event.prompt_logprobs = {{second, -0.7f, {{'z', -0.2f}, {second, -0.7f}}, 2}};
    responder.OnEvent(event);
  }
  const json body = json::parse(responder.FinalBody());
  ASSERT_EQ(body["choices"].size(), 4u);
  EXPECT_EQ(body["choices"][1]["text"], "ab1");
  EXPECT_EQ(body["choices"][2]["text"], "xy2");
  EXPECT_EQ(body["choices"][3]["index"], 3);
  const json& prompt_logprobs = body["choices"][2]["prompt_logprobs"];
  ASSERT_EQ(prompt_logprobs.size(), 2u);
  EXPECT_TRUE(prompt_logprobs[0].is_null());
  EXPECT_EQ(prompt_logprobs[1][std::to_string('y')],
            json({{"logprob", -0.7f}, {"rank", 2}, {"decoded_token", "y"}}));
  EXPECT_EQ(prompt_logprobs[1][std::to_string('z')],
            json({{"logprob", -0.2f}, {"rank", 1}, {"decoded_token", "z"}}));
  EXPECT_EQ(prompt_logprobs[1].size(), 2u);  // top 1 + the prompt token
}

TEST(CompletionResponderTest, NoLogprobsMeansNull) {
  const ServerContext ctx = TestContext();
  CompletionResponder responder(MakeCompletionPlan(false), ctx, "cmpl", 0);
  responder.OnEvent(Ev(0, "xyz", FinishReason::kStop, true));
  const json body = json::parse(responder.FinalBody());
  EXPECT_EQ(body["choices"][0]["text"], "xyz");
  EXPECT_TRUE(body["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(responder.failure());
}

}  // namespace
}  // namespace k3::api
