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

TEST(TokenizeTest, GenerationPromptAndContinueFinalMessage) {
  const ServerContext ctx = TestContext();
  ApiError error;
  const std::string history = R"("messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "Once", "reasoning_content": "r"}])";
  auto text = [&](const std::string& fields) -> std::string {
    auto body = Tokenize("{" + history + ", \"return_token_strs\": true" + fields + "}", ctx, &error);
    if (!body) return "error: " + error.message;
    const json parsed = json::parse(*body);
    std::string out;
    for (const auto& piece : parsed["token_strs"]) out += piece.get<std::string>();
    return out;
  };
  const std::string with = text("");
  const std::string without = text(R"(, "add_generation_prompt": false)");
  const std::string continued = text(R"(, "add_generation_prompt": false, "continue_final_message": true)");
  EXPECT_NE(with, without);
  EXPECT_EQ(with, without + "<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>");
  EXPECT_EQ(without.substr(without.size() - 14), "<|end_of_msg|>");
  EXPECT_EQ(continued.substr(continued.size() - 27), "<|open|>response<|sep|>Once");
  EXPECT_EQ(continued.find("Once<|close|>"), std::string::npos);

  EXPECT_FALSE(Tokenize("{" + history + R"(, "continue_final_message": true})", ctx, &error));
  EXPECT_EQ(error.http_status, 400);
  EXPECT_EQ(error.param, "continue_final_message");
  EXPECT_NE(error.message.find("Cannot set both"), std::string::npos);
}

TEST(RenderTest, ChatRenderGivesTheChatPrompt) {
  const ServerContext ctx = TestContext();
  ApiError error;
  const std::string chat = R"({"model": "Kimi-K3", "messages": [{"role": "user", "content": "hi"}],
      "response_format": {"type": "json_object"}, "max_tokens": 5})";
  auto body = RenderChatCompletion(chat, ctx, "rid-1", &error);
  ASSERT_TRUE(body) << error.message;
  const json rendered = json::parse(*body);
  auto plan = ParseChatCompletion(chat, ctx, &error);
  ASSERT_TRUE(plan);
  EXPECT_EQ(rendered["token_ids"], json(plan->request.prompt));
  EXPECT_EQ(rendered["request_id"], "rid-1");
  EXPECT_EQ(rendered["model"], "Kimi-K3");
  EXPECT_TRUE(rendered["features"].is_null());
  const std::string prompt = rendered["prompt"];
  EXPECT_NE(prompt.find("type=\"response-format\""), std::string::npos);
  EXPECT_EQ(prompt.substr(prompt.size() - 12), "think<|sep|>");

  EXPECT_FALSE(RenderChatCompletion(R"({"messages": [{"role": "user", "content": "hi"}],
      "add_generation_prompt": true, "continue_final_message": true})",
                                    ctx, "rid", &error));
  EXPECT_EQ(error.param, "continue_final_message");
  EXPECT_FALSE(RenderChatCompletion(R"({"model": "other", "messages": []})", ctx, "rid", &error));
  EXPECT_EQ(error.http_status, 404);
}

TEST(RenderTest, CompletionRenderGivesEachPrompt) {
  const ServerContext ctx = TestContext();
  ApiError error;
  auto body = RenderCompletion(R"({"model": "Kimi-K3", "prompt": ["hi", [104, 259]]})", ctx, "rid", &error);
  ASSERT_TRUE(body) << error.message;
  const json rendered = json::parse(*body);
  ASSERT_TRUE(rendered.is_array());
  ASSERT_EQ(rendered.size(), 2u);
  EXPECT_EQ(rendered[0]["token_ids"], json({104, 105}));
  EXPECT_EQ(rendered[0]["prompt"], "hi");
  EXPECT_EQ(rendered[0]["request_id"], "rid-0");
  EXPECT_EQ(rendered[1]["token_ids"], json({104, 259}));
  EXPECT_EQ(rendered[1]["prompt"], "h<|open|>");
  EXPECT_FALSE(RenderCompletion(R"({"prompt": 5})", ctx, "rid", &error));
  EXPECT_EQ(error.param, "prompt");
}

}  // namespace
}  // namespace k3::api
