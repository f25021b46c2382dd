// Sampler tests: exact results of each filter, penalties, masks, logprobs and seeded draws.
#include "src/engine/sampler.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace k3::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> LogOf(std::vector<double> probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::vector<bool> Kept(const std::vector<float>& logits) {
  std::vector<bool> out;
  for (float v : logits) out.push_back(v != -kInf);
  return out;
}

TEST(SamplerFilters, TopKKeepsTheLargestWithTiesToLowerIds) {
  std::vector<float> l = {1, 3, 2, 3};
  ApplyTopK(l, 2);
  EXPECT_EQ(Kept(l), (std::vector<bool>{false, true, false, true}));
  std::vector<float> ties = {5, 5, 5};
  ApplyTopK(ties, 1);
  EXPECT_EQ(Kept(ties), (std::vector<bool>{true, false, false}));
  std::vector<float> off = {1, 2};
  ApplyTopK(off, 0);
  EXPECT_EQ(Kept(off), (std::vector<bool>{true, true}));
}

TEST(SamplerFilters, TopPKeepsTheSmallestSetReachingP) {
  std::vector<float> l = LogOf({0.2, 0.5, 0.3});
  ApplyTopP(l, 0.7f);  // 0.5 + 0.3 = 0.8 >= 0.7
  EXPECT_EQ(Kept(l), (std::vector<bool>{false, true, true}));
  l = LogOf({0.2, 0.5, 0.3});
  ApplyTopP(l, 0.45f);  // 0.5 alone
  EXPECT_EQ(Kept(l), (std::vector<bool>{false, true, false}));
  l = LogOf({0.2, 0.5, 0.3});
  ApplyTopP(l, 0.85f);  // needs all three
  EXPECT_EQ(Kept(l), (std::vector<bool>{true, true, true}));
}

TEST(SamplerFilters, MinPIsRelativeToTheLargestProbability) {
  std::vector<float> l = LogOf({0.1, 0.5, 0.3, 0.1});
  ApplyMinP(l, 0.5f);  // threshold 0.25
  EXPECT_EQ(Kept(l), (std::vector<bool>{false, true, true, false}));
  l = LogOf({0.1, 0.5, 0.3, 0.1});
  ApplyMinP(l, 0.19f);  // threshold 0.095: all stay
  EXPECT_EQ(Kept(l), (std::vector<bool>{true, true, true, true}));
}

TEST(SamplerFilters, DrawWalksTheCumulativeDistributionInIdOrder) {
  const std::vector<float> l = LogOf({0.2, 0.5, 0.3});  // cumulative: 0.2, 0.7, 1.0
  EXPECT_EQ(DrawFromLogits(l, 0.0), 0);
  EXPECT_EQ(DrawFromLogits(l, 0.19), 0);
  EXPECT_EQ(DrawFromLogits(l, 0.21), 1);
  EXPECT_EQ(DrawFromLogits(l, 0.69), 1);
  EXPECT_EQ(DrawFromLogits(l, 0.71), 2);
  EXPECT_EQ(DrawFromLogits(l, 0.999), 2);
  EXPECT_EQ(DrawFromLogits(std::vector<float>{-kInf, 0.0f, -kInf}, 0.9), 1);  // -inf ids are never drawn
  EXPECT_EQ(DrawFromLogits(std::vector<float>{-kInf, -kInf}, 0.5), -1);
}

TEST(SamplerFilters, LogSoftmaxAndTopLogprobs) {
  std::vector<float> l = LogOf({0.2, 0.5, 0.3});
  for (float& v : l) v += 7.0f;  // shift-invariant
  LogSoftmax(l);
  EXPECT_NEAR(l[0], std::log(0.2), 1e-6);
  EXPECT_NEAR(l[1], std::log(0.5), 1e-6);
  const TokenLogprob lp = MakeTokenLogprob(l, 0, 2);
  EXPECT_EQ(lp.token, 0);
  EXPECT_FLOAT_EQ(lp.logprob, l[0]);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].token, 1);
  EXPECT_EQ(lp.top[1].token, 2);
}

SamplingParams Greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

TEST(Sampler, GreedyTakesTheArgmax) {
  SamplingParams p = Greedy();
  Sampler s(p, 1, {});
  EXPECT_EQ(s.Sample(std::vector<float>{0.1f, 2.0f, 1.0f}, nullptr, {}, nullptr), 1);
}

TEST(Sampler, RepetitionPenaltyCoversPromptAndOutput) {
  SamplingParams p = Greedy();
  p.repetition_penalty = 2.0f;
  const std::vector<int32_t> prompt = {0};
  Sampler s(p, 1, prompt);
  // id 0 (in the prompt): 2 / 2 = 1 < 1.5.
  EXPECT_EQ(s.Sample(std::vector<float>{2.0f, 1.5f, -1.0f}, nullptr, {}, nullptr), 1);
  // Negative logits are multiplied: id 1 after output: -0.4 * 2 = -0.8 < -0.6.
  s.Accept(1);
  EXPECT_EQ(s.Sample(std::vector<float>{-5.0f, -0.4f, -0.6f}, nullptr, {}, nullptr), 2);
}

TEST(Sampler, FrequencyAndPresencePenaltiesUseOutputCounts) {
  SamplingParams p = Greedy();
  p.frequency_penalty = 0.3f;
  Sampler s(p, 1, {});
  s.Accept(1);
  s.Accept(1);
  EXPECT_EQ(s.Sample(std::vector<float>{2.0f, 2.5f}, nullptr, {}, nullptr), 0);  // 2.5 - 0.6 = 1.9
  EXPECT_EQ(s.Sample(std::vector<float>{2.0f, 2.7f}, nullptr, {}, nullptr), 1);  // 2.1
  SamplingParams q = Greedy();
  q.presence_penalty = 1.0f;
  Sampler t(q, 1, {});
  t.Accept(1);
  t.Accept(1);
  EXPECT_EQ(t.Sample(std::vector<float>{2.0f, 2.9f}, nullptr, {}, nullptr), 0);  // 1.9: once, not per count
  EXPECT_EQ(t.Sample(std::vector<float>{2.0f, 3.1f}, nullptr, {}, nullptr), 1);
}

TEST(Sampler, LogitBiasMaskAndBannedIds) {
  SamplingParams p = Greedy();
  p.logit_bias = {{2, 5.0f}};
  Sampler s(p, 1, {});
  const std::vector<float> l = {3.0f, 1.0f, 0.0f, 2.0f};
  EXPECT_EQ(s.Sample(l, nullptr, {}, nullptr), 2);
  const uint64_t allowed = 0b1011;  // ids 0, 1, 3
  EXPECT_EQ(s.Sample(l, &allowed, {}, nullptr), 0);
  const std::vector<int32_t> banned = {0};
  EXPECT_EQ(s.Sample(l, &allowed, banned, nullptr), 3);
  const uint64_t none = 0;
  EXPECT_EQ(s.Sample(l, &none, {}, nullptr), -1);
}

TEST(Sampler, LogprobsComeFromTheRawRow) {
  SamplingParams p = Greedy();
  p.logprobs = 1;
  p.logit_bias = {{0, 10.0f}};
  Sampler s(p, 1, {});
  const std::vector<float> l = LogOf({0.2, 0.5, 0.3});
  TokenLogprob lp;
  EXPECT_EQ(s.Sample(l, nullptr, {}, &lp), 0);   // the bias picks 0...
  EXPECT_NEAR(lp.logprob, std::log(0.2), 1e-6);  // ...but its logprob is unbiased
  ASSERT_EQ(lp.top.size(), 1u);
  EXPECT_EQ(lp.top[0].token, 1);
}

TEST(Sampler, SeededDrawsRepeatAndDifferAcrossSeeds) {
  SamplingParams p;
  p.temperature = 1.0f;
  const std::vector<float> flat(16, 0.0f);
  auto draws = [&](uint64_t seed) {
    Sampler s(p, seed, {});
    std::vector<int32_t> out;
    for (int i = 0; i < 40; ++i) out.push_back(s.Sample(flat, nullptr, {}, nullptr));
    return out;
  };
  EXPECT_EQ(draws(7), draws(7));
  EXPECT_NE(draws(7), draws(8));
}

TEST(Sampler, TemperatureSharpensTowardsTheArgmax) {
  SamplingParams p;
  p.temperature = 0.01f;
  Sampler s(p, 3, {});
  const std::vector<float> l = {1.0f, 1.2f, 0.9f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.Sample(l, nullptr, {}, nullptr), 1);
}

}  // namespace
}  // namespace k3::engine
