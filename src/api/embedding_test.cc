// /v1/embeddings: request validation (input forms, encoding_format, dimensions, truncation, context) and
// EmbeddingResponder bodies (float and base64, input order, usage, engine failures).
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"
#include "src/api/embeddings.h"
#include "src/base/base64.h"

namespace k3::api {
namespace {

using engine::FinishReason;
using nlohmann::json;
using testing::TestContext;

ApiError MustFail(const std::string& body, const ServerContext& ctx = TestContext()) {
  ApiError error;
  EXPECT_FALSE(ParseEmbedding(body, ctx, &error)) << body;
  return error;
}

TEST(EmbeddingRequestTest, InputForms) {
  const ServerContext ctx = TestContext();
  ApiError error;
  auto text = ParseEmbedding(R"({"model": "Kimi-K3", "input": "ab<|open|>"})", ctx, &error);
  ASSERT_TRUE(text) << error.message;
  ASSERT_EQ(text->inputs.size(), 1u);
  EXPECT_EQ(text->inputs[0], (std::vector<int32_t>{'a', 'b', 256 + 3}));
  EXPECT_FALSE(text->base64);
  EXPECT_TRUE(text->normalize);
  EXPECT_EQ(text->model, "Kimi-K3");

  auto ids = ParseEmbedding(R"({"input": [104, 105], "encoding_format": "base64"})", ctx, &error);
  ASSERT_TRUE(ids) << error.message;
  EXPECT_EQ(ids->inputs, (std::vector<std::vector<int32_t>>{{104, 105}}));
  EXPECT_TRUE(ids->base64);

  auto batch = ParseEmbedding(R"({"input": ["hi", [97, 98, 99], "xy"], "encoding_format": "float",
                                  "user": "u1", "add_special_tokens": true, "normalize": false,
                                  "some_unknown_field": 1})",
                              ctx, &error);
  ASSERT_TRUE(batch) << error.message;
  ASSERT_EQ(batch->inputs.size(), 3u);
  EXPECT_EQ(batch->inputs[1], (std::vector<int32_t>{97, 98, 99}));
  EXPECT_EQ(batch->prompt_tokens, 2 + 3 + 2);
  EXPECT_FALSE(batch->normalize);
  const std::vector<engine::Request> requests = EmbeddingRequests(*batch);
  ASSERT_EQ(requests.size(), 3u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_TRUE(requests[i].embed);
    EXPECT_FALSE(requests[i].embed_normalize);
    EXPECT_EQ(requests[i].sampling.n, 1);
    EXPECT_EQ(requests[i].prompt, batch->inputs[i]);
  }
}

TEST(EmbeddingRequestTest, Errors) {
  EXPECT_EQ(MustFail(R"({"model": "gpt-4", "input": "a"})").http_status, 404);
  EXPECT_EQ(MustFail(R"({"model": "Kimi-K3"})").param, "input");
  EXPECT_EQ(MustFail(R"({"input": []})").param, "input");
  EXPECT_EQ(MustFail(R"({"input": ""})").param, "input");
  EXPECT_EQ(MustFail(R"({"input": ["a", ""]})").param, "input[1]");
  EXPECT_EQ(MustFail(R"({"input": [[1, 2], []]})").param, "input[1]");
  EXPECT_EQ(MustFail(R"({"input": 5})").param, "input");
  EXPECT_EQ(MustFail(R"({"input": {"a": 1}})").param, "input");
  EXPECT_EQ(MustFail(R"({"input": ["a", 5]})").param, "input[1]");
  EXPECT_EQ(MustFail(R"({"input": [1, "a"]})").param, "input[1]");
  EXPECT_EQ(MustFail(R"({"input": [1, 999999]})").param, "input[1]");
  EXPECT_EQ(MustFail(R"({"input": [-1]})").param, "input[0]");
  EXPECT_EQ(MustFail(R"({"input": "a", "encoding_format": "int8"})").param, "encoding_format");
  EXPECT_EQ(MustFail(R"({"input": "a", "encoding_format": 1})").param, "encoding_format");
  const ApiError dims = MustFail(R"({"input": "a", "dimensions": 8})");
  EXPECT_EQ(dims.http_status, 400);
  EXPECT_EQ(dims.param, "dimensions");
  EXPECT_NE(dims.message.find("matryoshka"), std::string::npos) << dims.message;
  EXPECT_EQ(MustFail(R"({"input": "a", "user": 3})").param, "user");
  EXPECT_EQ(MustFail(R"({"input": "a", "truncate_prompt_tokens": 0})").param, "truncate_prompt_tokens");
  EXPECT_EQ(MustFail(R"({"input": "a", "truncate_prompt_tokens": -2})").param, "truncate_prompt_tokens");
  EXPECT_EQ(MustFail(R"({"input": "a", "truncate_prompt_tokens": 5000})").param, "truncate_prompt_tokens");
  EXPECT_EQ(MustFail(R"({"input": "a", "stream": true})").param, "stream");
  EXPECT_EQ(MustFail("[1, 2]").http_status, 400);
  EXPECT_EQ(MustFail("{").http_status, 400);

  std::string many = R"({"input": [)";
  for (int i = 0; i < 257; ++i) many += std::string(i ? "," : "") + "\"a\"";
  many += "]}";
  EXPECT_NE(MustFail(many).message.find("at most 256"), std::string::npos);
}

TEST(EmbeddingRequestTest, ContextLimitAndTruncation) {
  ServerContext ctx = TestContext();
  ctx.max_model_len = 8;
  ApiError error;
  ASSERT_TRUE(ParseEmbedding(R"({"input": "abcdefgh"})", ctx, &error)) << error.message;  // may fill it
  const ApiError too_long = MustFail(R"({"input": ["a", "abcdefghi"]})", ctx);
  EXPECT_EQ(too_long.http_status, 400);
  EXPECT_EQ(too_long.param, "input[1]");
  EXPECT_NE(too_long.message.find("maximum context length is 8"), std::string::npos) << too_long.message;

  auto kept = ParseEmbedding(R"({"input": ["abcdefghij", "ab"], "truncate_prompt_tokens": 3})", ctx, &error);
  ASSERT_TRUE(kept) << error.message;
  EXPECT_EQ(kept->inputs[0], (std::vector<int32_t>{'h', 'i', 'j'}));  // the last 3 tokens
  EXPECT_EQ(kept->inputs[1], (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ(kept->prompt_tokens, 5);
  auto to_context = ParseEmbedding(R"({"input": "abcdefghij", "truncate_prompt_tokens": -1})", ctx, &error);
  ASSERT_TRUE(to_context) << error.message;
  EXPECT_EQ(to_context->inputs[0].size(), 8u);
  EXPECT_EQ(to_context->inputs[0].front(), 'c');
}

engine::Event Pooled(int32_t choice, std::vector<float> v, int64_t prompt_tokens, bool done) {
  engine::Event e;
  e.choice = choice;
  e.embedding = std::move(v);
  e.finish = FinishReason::kStop;
  e.request_done = done;
  e.usage.prompt_tokens = prompt_tokens;
  return e;
}

TEST(EmbeddingResponderTest, FloatAndBase64Bodies) {
  const ServerContext ctx = TestContext();
  ApiError error;
  auto plan = ParseEmbedding(R"({"input": ["ab", "c"]})", ctx, &error);
  ASSERT_TRUE(plan) << error.message;
  EmbeddingResponder responder(*plan, ctx, "embd-1", 1700000000);
  // Events arrive in any order; data follows the inputs.
  EXPECT_TRUE(responder.OnEvent(Pooled(1, {0.0f, 1.0f}, 1, false)).empty());
  EXPECT_TRUE(responder.OnEvent(Pooled(0, {0.6f, -0.8f}, 3, true)).empty());
  ASSERT_FALSE(responder.failure());
  const json body = json::parse(responder.FinalBody());
  EXPECT_EQ(body["id"], "embd-1");
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["created"], 1700000000);
  EXPECT_EQ(body["model"], "Kimi-K3");
  ASSERT_EQ(body["data"].size(), 2u);
  EXPECT_EQ(body["data"][0]["object"], "embedding");
  EXPECT_EQ(body["data"][0]["index"], 0);
  EXPECT_EQ(body["data"][1]["index"], 1);
  EXPECT_FLOAT_EQ(body["data"][0]["embedding"][0].get<float>(), 0.6f);
  EXPECT_FLOAT_EQ(body["data"][0]["embedding"][1].get<float>(), -0.8f);
  EXPECT_FLOAT_EQ(body["data"][1]["embedding"][1].get<float>(), 1.0f);
  EXPECT_EQ(body["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(body["usage"]["total_tokens"], 3);
  EXPECT_EQ(body["usage"]["completion_tokens"], 0);

  auto b64 = ParseEmbedding(R"({"input": "ab", "encoding_format": "base64"})", ctx, &error);
  ASSERT_TRUE(b64) << error.message;
  EmbeddingResponder encoded(*b64, ctx, "embd-2", 1);
  encoded.OnEvent(Pooled(0, {0.6f, -0.8f, 1.5f}, 2, true));
  const json body64 = json::parse(encoded.FinalBody());
  const std::string text = body64["data"][0]["embedding"].get<std::string>();
  auto bytes = Base64Decode(text);
  ASSERT_TRUE(bytes.ok());
  ASSERT_EQ(bytes->size(), 3 * sizeof(float));
  float back[3];
  std::memcpy(back, bytes->data(), sizeof(back));  // little-endian float32, as numpy's tobytes()
  EXPECT_EQ(back[0], 0.6f);
  EXPECT_EQ(back[1], -0.8f);
  EXPECT_EQ(back[2], 1.5f);
  // The bytes of 1.0f (0x3f800000) little-endian: 00 00 80 3f.
  EmbeddingResponder one(*b64, ctx, "embd-3", 1);
  one.OnEvent(Pooled(0, {1.0f}, 2, true));
  EXPECT_EQ(json::parse(one.FinalBody())["data"][0]["embedding"], "AACAPw==");
}

TEST(EmbeddingResponderTest, EngineErrorsAndAborts) {
  const ServerContext ctx = TestContext();
  ApiError error;
  auto plan = ParseEmbedding(R"({"input": "ab"})", ctx, &error);
  ASSERT_TRUE(plan);
  EmbeddingResponder failed(*plan, ctx, "embd-1", 1);
  engine::Event e;
  e.finish = FinishReason::kError;
  e.error = "the model is unavailable: rank 1 lost";
  e.unavailable = true;
  e.request_done = true;
  failed.OnEvent(e);
  ASSERT_TRUE(failed.failure());
  EXPECT_EQ(failed.failure()->http_status, 503);
  EmbeddingResponder aborted(*plan, ctx, "embd-2", 1);
  e.finish = FinishReason::kAbort;
  e.error.clear();
  aborted.OnEvent(e);
  ASSERT_TRUE(aborted.failure());
}

}  // namespace
}  // namespace k3::api
