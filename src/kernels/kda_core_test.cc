// KdaChunked against KdaRecurrent: same outputs and final state on random heads, including decays near
// the lower bound (G reaches about -320 over a chunk), lengths that are not multiples of 64, and an
// incoming non-zero state.
#include "src/kernels/kda_core.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace k3::kernels {
namespace {

struct HeadInputs {
  std::vector<float> q, k, v, g, beta;  // q, k, g: [n, K]; v: [n, V]; beta: [n]
};

void L2Normalize(float* x, int64_t K, float scale) {
  float ss = 0.0f;
  for (int64_t d = 0; d < K; ++d) ss += x[d] * x[d];
  const float inv = scale / std::sqrt(ss + 1e-6f);
  for (int64_t d = 0; d < K; ++d) x[d] *= inv;
}

HeadInputs RandomHead(int64_t n, int64_t K, int64_t V, float g_min, float g_max, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> gate(g_min, g_max), unit(0.0f, 1.0f);
  HeadInputs in;
  in.q.resize(n * K);
  in.k.resize(n * K);
  in.v.resize(n * V);
  in.g.resize(n * K);
  in.beta.resize(n);
  for (float& x : in.q) x = normal(rng);
  for (float& x : in.k) x = normal(rng);
  for (float& x : in.v) x = normal(rng);
  for (float& x : in.g) x = gate(rng);
  for (float& x : in.beta) x = unit(rng);
  for (int64_t t = 0; t < n; ++t) {
    L2Normalize(&in.q[t * K], K, 1.0f / std::sqrt(static_cast<float>(K)));
    L2Normalize(&in.k[t * K], K, 1.0f);
  }
  return in;
}

double RelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

struct Case {
  int64_t n;
  float g_min, g_max;
};

TEST(KdaCoreTest, ChunkedMatchesRecurrent) {
  const int64_t K = 32, V = 24;
  const Case cases[] = {{1, -1.0f, 0.0f},    {63, -1.0f, 0.0f},  {64, -5.0f, -4.9f}, {65, -0.1f, 0.0f},
                        {130, -5.0f, -4.5f}, {200, -2.0f, 0.0f}, {129, -5.0f, 0.0f}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "n=" << c.n << " g in [" << c.g_min << ", " << c.g_max << "]");
    HeadInputs in = RandomHead(c.n, K, V, c.g_min, c.g_max, seed++);
    // A non-zero incoming state, as after an earlier chunk.
    std::vector<float> s_rec(K * V), s_chunk;
    std::mt19937 rng(seed++);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    for (float& x : s_rec) x = normal(rng);
    s_chunk = s_rec;
    std::vector<float> o_rec(c.n * V), o_chunk(c.n * V);
    KdaRecurrent(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), c.n, K, V, s_rec.data(),
                 o_rec.data());
    KdaChunkScratch scratch;
    KdaChunked(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), c.n, K, V, s_chunk.data(),
               o_chunk.data(), &scratch);
    for (float x : o_chunk) ASSERT_TRUE(std::isfinite(x));
    EXPECT_LE(RelativeError(o_chunk, o_rec), 1e-5);
    EXPECT_LE(RelativeError(s_chunk, s_rec), 1e-5);
  }
}

TEST(KdaCoreTest, DecayAndDeltaRuleByHand) {
  // K = V = 1: S = e^g S + beta k (v - e^g S k); o = S q.
  const float q = 0.5f, k = 1.0f, v = 2.0f, g = std::log(0.5f), beta = 0.25f;
  float S = 4.0f, o = 0.0f;
  KdaRecurrent(&q, &k, &v, &g, &beta, 1, 1, 1, &S, &o);
  // decayed S = 2; p = 2; S = 2 + 0.25 * (2 - 2) = 2; o = 1.
  EXPECT_FLOAT_EQ(S, 2.0f);
  EXPECT_FLOAT_EQ(o, 1.0f);
  const float v2 = 6.0f;
  KdaRecurrent(&q, &k, &v2, &g, &beta, 1, 1, 1, &S, &o);
  // decayed S = 1; p = 1; S = 1 + 0.25 * 5 = 2.25; o = 1.125.
  EXPECT_FLOAT_EQ(S, 2.25f);
  EXPECT_FLOAT_EQ(o, 1.125f);
}

TEST(KdaCoreTest, SplitPrefillCarriesState) {
  // Chunked over [0, 100) equals chunked over [0, 37) then [37, 100) with the state carried.
  const int64_t K = 16, V = 16, n = 100, split = 37;
  HeadInputs in = RandomHead(n, K, V, -5.0f, 0.0f, 99);
  std::vector<float> s_one(K * V, 0.0f), s_two(K * V, 0.0f), o_one(n * V), o_two(n * V);
  KdaChunkScratch scratch;
  KdaChunked(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), n, K, V, s_one.data(),
             o_one.data(), &scratch);
  KdaChunked(in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), split, K, V, s_two.data(),
             o_two.data(), &scratch);
  KdaChunked(in.q.data() + split * K, in.k.data() + split * K, in.v.data() + split * V,
             in.g.data() + split * K, in.beta.data() + split, n - split, K, V, s_two.data(),
             o_two.data() + split * V, &scratch);
  EXPECT_LE(RelativeError(o_two, o_one), 1e-5);
  EXPECT_LE(RelativeError(s_two, s_one), 1e-5);
}

}  // namespace
}  // namespace k3::kernels
