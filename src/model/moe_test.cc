// MoE router (hand-computed cases: correction bias changes selection but not weights, renormalisation,
// scaling) and the batched expert grouping (a batch equals its tokens run one by one).
#include "src/model/moe.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "src/model/testing/random_model.h"
#include "src/model/weights.h"

namespace k3::model {
namespace {

float Logit(float p) { return std::log(p / (1.0f - p)); }

TEST(RouteTokensTest, HandComputedTopTwo) {
  // One token, 4 experts with sigmoid scores 0.9, 0.6, 0.3, 0.2 and no bias.
  const float logits[4] = {Logit(0.9f), Logit(0.6f), Logit(0.3f), Logit(0.2f)};
  const float no_bias[4] = {0, 0, 0, 0};
  int32_t experts[2];
  float weights[2];
  RouteTokens(logits, 1, 4, no_bias, 2, /*renormalize=*/true, 1.0f, experts, weights);
  EXPECT_EQ(experts[0], 0);
  EXPECT_EQ(experts[1], 1);
  EXPECT_NEAR(weights[0], 0.9f / 1.5f, 1e-6);
  EXPECT_NEAR(weights[1], 0.6f / 1.5f, 1e-6);

  // Without renormalisation the weights are the raw scores, times the scaling factor.
  RouteTokens(logits, 1, 4, no_bias, 2, /*renormalize=*/false, 2.0f, experts, weights);
  EXPECT_NEAR(weights[0], 1.8f, 1e-6);
  EXPECT_NEAR(weights[1], 1.2f, 1e-6);
}

TEST(RouteTokensTest, CorrectionBiasSelectsButDoesNotWeigh) {
  const float logits[4] = {Logit(0.9f), Logit(0.6f), Logit(0.3f), Logit(0.2f)};
  // Bias lifts expert 3 (0.2 + 0.5 = 0.7) above expert 1 (0.6 + 0 = 0.6) for selection.
  const float bias[4] = {0.0f, 0.0f, 0.0f, 0.5f};
  int32_t experts[2];
  float weights[2];
  RouteTokens(logits, 1, 4, bias, 2, /*renormalize=*/true, 2.5f, experts, weights);
  EXPECT_EQ(experts[0], 0);
  EXPECT_EQ(experts[1], 3);
  // Weights come from the uncorrected scores 0.9 and 0.2, renormalised, then scaled.
  EXPECT_NEAR(weights[0], 2.5f * 0.9f / 1.1f, 1e-5);
  EXPECT_NEAR(weights[1], 2.5f * 0.2f / 1.1f, 1e-5);
  EXPECT_NEAR(weights[0] + weights[1], 2.5f, 1e-5);
}

TEST(RouteTokensTest, SeveralTokensAndTies) {
  // Token 0: all equal -> lowest indices win. Token 1: reversed order.
  const float logits[2 * 3] = {0.0f, 0.0f, 0.0f, -1.0f, 0.0f, 1.0f};
  const float bias[3] = {0, 0, 0};
  int32_t experts[2 * 2];
  float weights[2 * 2];
  RouteTokens(logits, 2, 3, bias, 2, true, 1.0f, experts, weights);
  EXPECT_EQ(experts[0], 0);
  EXPECT_EQ(experts[1], 1);
  EXPECT_NEAR(weights[0], 0.5f, 1e-6);
  EXPECT_EQ(experts[2], 2);
  EXPECT_EQ(experts[3], 1);
  const float s2 = 1.0f / (1.0f + std::exp(-1.0f)), s1 = 0.5f;
  EXPECT_NEAR(weights[2], s2 / (s1 + s2), 1e-6);
}

// Batched expert grouping equals running each token alone (both K3 latent MXFP4 and Kimi Linear bf16).
TEST(MoeForwardTest, BatchEqualsTokensOneByOne) {
  for (bool k3 : {true, false}) {
    SCOPED_TRACE(k3 ? "kimi_k3" : "kimi_linear");
    io::ModelConfig cfg = k3 ? testing::TinyK3Config() : testing::TinyKimiLinearConfig();
    auto tensors = testing::MakeRandomTensors(cfg, 3);
    auto weights = BindWeights(cfg, [&](const std::string& n) { return tensors->Find(n); });
    ASSERT_TRUE(weights.ok()) << weights.status().ToString();
    const MoeWeights& moe = (*weights)->layers[1].moe;
    const int64_t T = 12, D = cfg.hidden_size;
    std::vector<float> x(T * D);
    uint32_t state = 1;
    for (float& v : x) {
      state = state * 1664525u + 1013904223u;
      v = RoundBf16(static_cast<float>(static_cast<int32_t>(state >> 8) % 2001 - 1000) / 500.0f);
    }
    ThreadPool pool(2);
    kernels::StepEnv pooled{.pool = &pool}, alone;
    std::vector<float> batched(T * D), single(T * D);
    MoeForward({cfg, T, {}, pooled}, moe, x.data(), batched.data());
    for (int64_t t = 0; t < T; ++t)
      MoeForward({cfg, 1, {}, alone}, moe, x.data() + t * D, single.data() + t * D);
    EXPECT_EQ(batched, single);
    double norm = 0.0;
    for (float v : batched) norm += v * v;
    EXPECT_GT(norm, 0.0);
  }
}

}  // namespace
}  // namespace k3::model
