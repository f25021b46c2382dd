// Tests of the vision tower's kernels (vision_ops.h): the bilinear resize against values PyTorch's
// F.interpolate gives, the 2-D RoPE tables and rotation against double-precision formulas, the GELUs
// against the erf / tanh formulas, and the attention against its plain-loop reference.
#include "src/kernels/vision_ops.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/bf16.h"

namespace k3::kernels {
namespace {

TEST(ResizeBilinearTest, MatchesPyTorchUpAndDown) {
  // F.interpolate(x, size=(4, 3), mode="bilinear", align_corners=False) of [[1, 2], [3, 4]].
  const std::vector<float> up_in = {1, 2, 3, 4};
  const std::vector<float> up_want = {1.0f, 1.5f, 2.0f, 1.5f, 2.0f, 2.5f, 2.5f, 3.0f, 3.5f, 3.0f, 3.5f, 4.0f};
  std::vector<float> up(12);
  ResizeBilinear(up_in.data(), 2, 2, 1, 4, 3, up.data());
  for (size_t i = 0; i < up.size(); ++i) EXPECT_FLOAT_EQ(up[i], up_want[i]) << i;
  // Shrinking arange(20) [4, 5] to [2, 3] (no antialias): PyTorch gives 2.8333, 4.5, 6.1667, 12.833, ...
  std::vector<float> down_in(20);
  for (int i = 0; i < 20; ++i) down_in[i] = static_cast<float>(i);
  const std::vector<float> down_want = {2.833333f, 4.5f, 6.166667f, 12.833333f, 14.5f, 16.166667f};
  std::vector<float> down(6);
  ResizeBilinear(down_in.data(), 4, 5, 1, 2, 3, down.data());
  for (size_t i = 0; i < down.size(); ++i) EXPECT_NEAR(down[i], down_want[i], 1e-5) << i;
  // Same size is a copy; channels stay together.
  std::vector<float> grid(2 * 3 * 4);
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = static_cast<float>(i) * 0.37f - 2.0f;
  std::vector<float> same(grid.size());
  ResizeBilinear(grid.data(), 2, 3, 4, 2, 3, same.data());
  EXPECT_EQ(same, grid);
}

TEST(Rope2DTest, TablesPairColumnsThenRows) {
  const size_t gh = 3, gw = 5, D = 8;
  std::vector<float> cos(gh * gw * D / 2), sin(cos.size());
  Rope2DTables(gh, gw, D, 10000.0f, cos.data(), sin.data());
  for (size_t r = 0; r < gh; ++r) {
    for (size_t c = 0; c < gw; ++c) {
      const size_t t = r * gw + c;
      for (size_t i = 0; i < D / 4; ++i) {
        const double f = std::pow(10000.0, -4.0 * i / D);
        EXPECT_NEAR(cos[t * D / 2 + 2 * i], std::cos(c * f), 1e-6);
        EXPECT_NEAR(sin[t * D / 2 + 2 * i], std::sin(c * f), 1e-6);
        EXPECT_NEAR(cos[t * D / 2 + 2 * i + 1], std::cos(r * f), 1e-6);
        EXPECT_NEAR(sin[t * D / 2 + 2 * i + 1], std::sin(r * f), 1e-6);
      }
    }
  }
  // Rotation of two heads of one token, at a stride with another block in between.
  const size_t stride = 3 * D;
  std::vector<float> x(gh * gw * stride);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : x) v = RoundBf16(normal(rng));
  const std::vector<float> before = x;
  ApplyRope2DRoundBf16(x.data(), gh * gw, stride, 2, D, cos.data(), sin.data());
  for (size_t t = 0; t < gh * gw; ++t) {
    for (size_t h = 0; h < 2; ++h) {
      for (size_t j = 0; j < D / 2; ++j) {
        const double c = cos[t * D / 2 + j], s = sin[t * D / 2 + j];
        const double x0 = before[t * stride + h * D + 2 * j], x1 = before[t * stride + h * D + 2 * j + 1];
        EXPECT_NEAR(x[t * stride + h * D + 2 * j], x0 * c - x1 * s, 1e-2 * (std::fabs(x0) + std::fabs(x1)));
        EXPECT_NEAR(x[t * stride + h * D + 2 * j + 1], x1 * c + x0 * s,
                    1e-2 * (std::fabs(x0) + std::fabs(x1)));
        EXPECT_EQ(x[t * stride + h * D + 2 * j], RoundBf16(x[t * stride + h * D + 2 * j]));
      }
    }
    // The third block of each row is untouched.
    for (size_t d = 2 * D; d < stride; ++d) EXPECT_EQ(x[t * stride + d], before[t * stride + d]);
  }
}

TEST(GeluTest, TanhAndErfFormulas) {
  std::vector<float> x;
  for (int i = -80; i <= 80; ++i) x.push_back(RoundBf16(0.1f * static_cast<float>(i)));
  std::vector<float> tanh_gelu = x, erf_gelu = x;
  GeluTanhRoundBf16(tanh_gelu.data(), x.size());
  GeluErfRoundBf16(erf_gelu.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double want_tanh = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    const double want_erf = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(tanh_gelu[i], want_tanh, 4e-3 * std::fabs(want_tanh) + 1e-6) << v;
    EXPECT_NEAR(erf_gelu[i], want_erf, 4e-3 * std::fabs(want_erf) + 1e-6) << v;
    EXPECT_EQ(tanh_gelu[i], RoundBf16(tanh_gelu[i]));
  }
  // The two differ (the tanh form is an approximation), e.g. at -3.
  EXPECT_NE(tanh_gelu[50], erf_gelu[50]);
}

TEST(BidirectionalAttentionTest, MatchesPlainLoopsAcrossBlocksAndThreads) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (auto [T, H, D] : {std::tuple<size_t, size_t, size_t>{1, 1, 4}, {5, 2, 8}, {130, 3, 24}}) {
    std::vector<float> qkv(T * 3 * H * D);
    for (float& v : qkv) v = RoundBf16(normal(rng));
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    std::vector<float> want(T * H * D), got(T * H * D), threaded(T * H * D);
    scalar::BidirectionalAttention(qkv.data(), T, H, D, scale, want.data());
    BidirectionalAttention(qkv.data(), T, H, D, scale, got.data(), nullptr);
    ThreadPool pool(3);
    BidirectionalAttention(qkv.data(), T, H, D, scale, threaded.data(), &pool);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "T " << T << " i " << i;
    }
    EXPECT_EQ(got, threaded);
  }
  // One token attends to itself only: the output is its value.
  std::vector<float> one = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> out(4);
  BidirectionalAttention(one.data(), 1, 1, 4, 0.5f, out.data(), nullptr);
  EXPECT_EQ(out, (std::vector<float>{9, 10, 11, 12}));
}

}  // namespace
}  // namespace k3::kernels
