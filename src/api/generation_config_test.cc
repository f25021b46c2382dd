// Generation-config defaults: parsing (keys, types, ranges), layering of the override, and what requests
// that omit a field get (chat and completions; a request's own field wins; max_new_tokens capped by the
// room the prompt leaves).
#include "src/api/generation_config.h"

#include <gtest/gtest.h>

#include "src/api/api_test_util.h"
#include "src/api/openai.h"

namespace k3::api {
namespace {

using nlohmann::json;

TEST(GenerationConfigTest, ReadsVllmsKeysAndNamesBadOnes) {
  auto d =
      ParseGenerationConfig(json::parse(R"({"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.01,
      "repetition_penalty": 1.05, "max_new_tokens": 100, "eos_token_id": [1, 2], "do_sample": true})"),
                            "m/generation_config.json");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FLOAT_EQ(*d->temperature, 0.6f);
  EXPECT_FLOAT_EQ(*d->top_p, 0.95f);
  EXPECT_EQ(*d->top_k, 20);
  EXPECT_EQ(*d->max_tokens, 100);
  EXPECT_EQ(d->Describe(),
            "temperature=0.6, top_p=0.95, top_k=20, min_p=0.01, repetition_penalty=1.05, max_tokens=100");
  EXPECT_TRUE(ParseGenerationConfig(json::object(), "x")->empty());
  for (const char* bad : {R"({"temperature": "hot"})", R"({"top_p": 0})", R"({"top_k": 1.5})",
                          R"({"max_new_tokens": 0})", R"([1])"}) {
    auto r = ParseGenerationConfig(json::parse(bad), "--override-generation-config");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--override-generation-config"), std::string::npos)
        << r.status().message();
  }
  SamplingDefaults base = *ParseGenerationConfig(json::parse(R"({"temperature": 0.6, "top_k": 20})"), "a");
  SamplingDefaults over = *ParseGenerationConfig(json::parse(R"({"temperature": 0.2})"), "b");
  const SamplingDefaults merged = MergeSamplingDefaults(base, over);
  EXPECT_FLOAT_EQ(*merged.temperature, 0.2f);
  EXPECT_EQ(*merged.top_k, 20);
}

TEST(GenerationConfigTest, RequestsThatOmitAFieldGetTheDefault) {
  ServerContext ctx = testing::TestContext();
  ctx.sampling_defaults = *ParseGenerationConfig(
      json::parse(R"({"temperature": 0.6, "top_p": 0.9, "max_new_tokens": 100})"), "test");
  ApiError error;
  auto chat = ParseChatCompletion(R"({"messages": [{"role": "user", "content": "hi"}]})", ctx, &error);
  ASSERT_TRUE(chat) << error.message;
  EXPECT_FLOAT_EQ(chat->request.sampling.temperature, 0.6f);
  EXPECT_FLOAT_EQ(chat->request.sampling.top_p, 0.9f);
  EXPECT_EQ(chat->request.sampling.max_tokens, 100);
  auto own = ParseChatCompletion(
      R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 0, "max_tokens": 7})", ctx, &error);
  ASSERT_TRUE(own) << error.message;
  EXPECT_EQ(own->request.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(own->request.sampling.top_p, 0.9f);
  EXPECT_EQ(own->request.sampling.max_tokens, 7);
  auto completion = ParseCompletion(R"({"prompt": "hi"})", ctx, &error);
  ASSERT_TRUE(completion) << error.message;
  EXPECT_EQ(completion->request.sampling.max_tokens, 100);  // instead of the legacy 16
  // The default is capped by the room the prompt leaves; a max_tokens the request sets is not.
  ctx.max_model_len = 50;
  auto capped = ParseCompletion(R"({"prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]})", ctx, &error);
  ASSERT_TRUE(capped) << error.message;
  EXPECT_EQ(capped->request.sampling.max_tokens, 40);
  EXPECT_FALSE(ParseCompletion(R"({"prompt": [1, 2, 3], "max_tokens": 48})", ctx, &error));
  EXPECT_EQ(error.param, "max_tokens");
}

}  // namespace
}  // namespace k3::api
