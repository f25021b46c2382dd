// /tokenize, /detokenize, /v1/models and error bodies.
#include <string>

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"
#include "src/api/errors.h"
#include "src/api/openai.h"

namespace k3::api {
namespace {

using nlohmann::json;
using testing::TestContext;

TEST(TokenizeTest, PromptAndMessages) {
  const ServerContext ctx = TestContext();
  ApiError error;
  auto body = Tokenize(R"({"model": "Kimi-K3", "prompt": "hi", "return_token_strs": true})", ctx, &error);
  ASSERT_TRUE(body) << error.message;
  EXPECT_EQ(
      json::parse(*body),
      json({{"count", 2}, {"max_model_len", 4096}, {"tokens", {104, 105}}, {"token_strs", {"h", "i"}}}));

  const std::string chat = R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": "hi"}],
      "chat_template_kwargs": {"thinking": false}})";
  body = Tokenize(chat, ctx, &error);
  ASSERT_TRUE(body) << error.message;
  const json tokens = json::parse(*body)["tokens"];
  auto plan = ParseChatCompletion(chat, ctx, &error);
  ASSERT_TRUE(plan);
  EXPECT_EQ(tokens, json(plan->request.prompt));  // the same ids chat completions would prompt with
  EXPECT_TRUE(json::parse(*body)["token_strs"].is_null());
}

TEST(TokenizeTest, Errors) {
  const ServerContext ctx = TestContext();
  ApiError error;
  EXPECT_FALSE(Tokenize(R"({"model": "x", "prompt": "hi"})", ctx, &error));
  EXPECT_EQ(error.http_status, 404);
  EXPECT_FALSE(Tokenize(R"({})", ctx, &error));
  EXPECT_EQ(error.param, "prompt");
  EXPECT_FALSE(Tokenize(R"({"prompt": 5})", ctx, &error));
  EXPECT_EQ(error.param, "prompt");
  EXPECT_FALSE(Tokenize(R"({"messages": [{"role": "user"}]})", ctx, &error));
  EXPECT_EQ(error.param, "messages[0].content");
  EXPECT_FALSE(Tokenize("not json", ctx, &error));
  EXPECT_EQ(error.http_status, 400);
}

TEST(DetokenizeTest, RoundTripAndRangeChecks) {
  const ServerContext ctx = TestContext();
  ApiError error;
  auto body = Detokenize(R"({"tokens": [104, 105, 259]})", ctx, &error);
  ASSERT_TRUE(body) << error.message;
  EXPECT_EQ(json::parse(*body), json({{"prompt", "hi<|open|>"}}));
  body = Detokenize(R"({"tokens": [195]})", ctx, &error);  // a lone UTF-8 lead byte still gives valid JSON
  ASSERT_TRUE(body);
  EXPECT_EQ(json::parse(*body)["prompt"], "\xEF\xBF\xBD");
  EXPECT_FALSE(Detokenize(R"({"tokens": [104, 512]})", ctx, &error));
  EXPECT_EQ(error.param, "tokens[1]");
  EXPECT_FALSE(Detokenize(R"({"tokens": [-1]})", ctx, &error));
  EXPECT_EQ(error.param, "tokens[0]");
  EXPECT_FALSE(Detokenize(R"({"tokens": "1 2"})", ctx, &error));
  EXPECT_EQ(error.param, "tokens");
  EXPECT_FALSE(Detokenize(R"({})", ctx, &error));
  EXPECT_EQ(error.param, "tokens");
}

TEST(ModelsTest, ListShape) {
  const json permission = {{"id", "modelperm-Kimi-K3"},
                           {"object", "model_permission"},
                           {"created", 1700000000},
                           {"allow_create_engine", false},
                           {"allow_sampling", true},
                           {"allow_logprobs", true},
                           {"allow_search_indices", false},
                           {"allow_view", true},
                           {"allow_fine_tuning", false},
                           {"organization", "*"},
                           {"group", nullptr},
                           {"is_blocking", false}};
  const json model = {{"id", "Kimi-K3"},       {"object", "model"},
                      {"created", 1700000000}, {"owned_by", "k3stack"},
                      {"root", "Kimi-K3"},     {"parent", nullptr},
                      {"max_model_len", 4096}, {"permission", json::array({permission})}};
  EXPECT_EQ(json::parse(ModelsBody(TestContext())),
            json({{"object", "list"}, {"data", json::array({model})}}));
}

TEST(ErrorBodyTest, OpenAiShapeAndNeverThrows) {
  ApiError error;
  error.message = "bad \xff byte";
  error.param = "messages";
  const json body = json::parse(ErrorBody(error));
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "messages");
  EXPECT_TRUE(body["error"]["code"].is_null());
  EXPECT_EQ(body["error"]["message"], "bad \xEF\xBF\xBD byte");
  ServerContext ctx;
  ctx.served_model_name = "Kimi-K3";
  ctx.served_model_aliases = {"kimi"};
  const json not_found = json::parse(ErrorBody(ModelNotFound("gpt", ctx)));
  EXPECT_EQ(not_found["error"]["type"], "not_found_error");
  EXPECT_EQ(not_found["error"]["code"], "model_not_found");
  EXPECT_NE(not_found["error"]["message"].get<std::string>().find("serves `Kimi-K3`, `kimi`"),
            std::string::npos);
}

// vLLM's --served-model-name A B: requests may name any of them (the reply echoes the name sent),
// /v1/models lists each, anything else is a 404.
TEST(ServedNamesTest, EveryNameIsAcceptedAndListed) {
  ServerContext ctx = TestContext();
  ctx.served_model_aliases = {"kimi", "k3"};
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}], "max_tokens": 4)";
  for (const std::string name : {"Kimi-K3", "kimi", "k3"}) {
    ApiError error;
    auto plan = ParseChatCompletion("{\"model\": \"" + name + "\", " + user + "}", ctx, &error);
    ASSERT_TRUE(plan.has_value()) << name << ": " << error.message;
    EXPECT_EQ(plan->model, name);
    auto completion =
        ParseCompletion(R"({"prompt": "x", "max_tokens": 2, "model": ")" + name + "\"}", ctx, &error);
    ASSERT_TRUE(completion.has_value()) << name << ": " << error.message;
  }
  ApiError error;
  EXPECT_FALSE(ParseChatCompletion("{\"model\": \"kimi-k2\", " + user + "}", ctx, &error));
  EXPECT_EQ(error.http_status, 404);
  const json models = json::parse(ModelsBody(ctx));
  ASSERT_EQ(models["data"].size(), 3u);
  EXPECT_EQ(models["data"][0]["id"], "Kimi-K3");
  EXPECT_EQ(models["data"][1]["id"], "kimi");
  EXPECT_EQ(models["data"][2]["id"], "k3");
}

}  // namespace
}  // namespace k3::api
