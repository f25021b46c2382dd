// layer_ops: each step against its definition written out here, and the properties the layers rely on
// (gather/scatter are inverses, the conv continues across chunks through its tail, routing breaks ties by
// the lower expert index).
#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/bf16.h"

namespace k3::kernels {
namespace {

float Sig(float x) { return 1.0f / (1.0f + std::exp(-x)); }

std::vector<float> Ramp(size_t n, float scale, float offset = 0.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * scale + offset);
  return v;
}

TEST(LayerOpsTest, ElementwiseSteps) {
  std::vector<float> h = Ramp(37, 0.3f), a = Ramp(37, 0.7f, 1.0f), want = h;
  for (size_t i = 0; i < h.size(); ++i) want[i] = RoundBf16(h[i] + a[i]);
  AddRoundBf16(h.data(), a.data(), h.size());
  EXPECT_EQ(h, want);
  for (size_t i = 0; i < h.size(); ++i) want[i] = RoundBf16(h[i] * Sig(a[i]));
  SigmoidGateRoundBf16(h.data(), a.data(), h.size());
  EXPECT_EQ(h, want);
  for (size_t i = 0; i < a.size(); ++i) want[i] = Sig(a[i]);
  SigmoidInPlace(a.data(), a.size());
  EXPECT_EQ(a, want);
}

TEST(LayerOpsTest, GatherAndScatterAreInverses) {
  const size_t width = 5, n = 4;
  std::vector<float> src = Ramp(n * width, 0.11f);
  const int32_t rows[] = {2, 0, 3, 1};
  std::vector<float> gathered(n * width), back(n * width);
  GatherRows(src.data(), width, rows, n, gathered.data());
  EXPECT_EQ(gathered[0], src[2 * width]);
  ScatterRows(gathered.data(), width, rows, n, back.data());
  EXPECT_EQ(back, src);
  const int64_t rows64[] = {3};
  std::vector<float> one(width);
  GatherRows(src.data(), width, rows64, 1, one.data());
  EXPECT_EQ(one[4], src[3 * width + 4]);
  std::vector<float> strided(3 * 8, 0.0f), heads(3 * 2);
  for (size_t i = 0; i < heads.size(); ++i) heads[i] = static_cast<float>(i + 1);
  ScatterHeadRows(heads.data(), 3, 2, 8, 4, strided.data());
  std::vector<float> again(3 * 2);
  GatherHeadRows(strided.data(), 8, 4, 3, 2, /*l2norm=*/false, 1.0f, again.data());
  EXPECT_EQ(again, heads);
  GatherHeadRows(strided.data(), 8, 4, 3, 2, /*l2norm=*/true, 2.0f, again.data());
  EXPECT_NEAR(again[0] * again[0] + again[1] * again[1], 4.0f, 1e-4f);  // scaled unit rows
}

TEST(LayerOpsTest, RowCopiesAndRowNorms) {
  // [T=2, H=3, Q=4] -> head 1's columns 1..2 as [T, 2], then back into another layout.
  std::vector<float> src(24);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  std::vector<float> dst(4, -1.0f);
  CopyRows(src.data() + 1 * 4 + 1, 12, dst.data(), 2, 2, 2);
  EXPECT_EQ(dst, (std::vector<float>{5, 6, 17, 18}));
  float a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
  float* rows[2] = {b, a};
  StoreRows(src.data(), 3, rows, 2);
  EXPECT_EQ(std::vector<float>(b, b + 3), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(std::vector<float>(a, a + 3), (std::vector<float>{3, 4, 5}));
  // Rows of 3 at stride 5: each equals the single-row kernel; the 2 floats between rows are untouched.
  std::vector<bf16> w = {FloatToBf16(1.0f), FloatToBf16(0.5f), FloatToBf16(2.0f)};
  std::vector<float> x = {1, 2, 3, 9, 9, 4, -5, 6, 9, 9}, y = x, want(3);
  RmsNormRows(x.data(), 2, 3, 5, w.data(), 1e-6f, y.data());
  for (int r = 0; r < 2; ++r) {
    RmsNorm(x.data() + r * 5, w.data(), 3, 1e-6f, want.data());
    EXPECT_EQ(std::vector<float>(y.begin() + r * 5, y.begin() + r * 5 + 3), want);
    EXPECT_EQ(y[r * 5 + 3], 9.0f);
  }
  const float gw[3] = {1.0f, 2.0f, 0.5f};
  std::vector<float> o = {1, 2, 3, 4, 5, 6}, gate = {0.1f, -1, 2, 3, 0, -2}, gated(6), one(3);
  GatedRmsNormRows(o.data(), gate.data(), gw, 2, 3, 1e-6f, gated.data());
  for (int r = 0; r < 2; ++r) {
    GatedRmsNorm(o.data() + r * 3, gate.data() + r * 3, gw, 3, 1e-6f, one.data());
    EXPECT_EQ(std::vector<float>(gated.begin() + r * 3, gated.begin() + r * 3 + 3), one);
  }
}

TEST(LayerOpsTest, WeightedRowSumInSlotOrder) {
  const size_t T = 2, k = 3, width = 4;
  std::vector<float> rows = Ramp(T * k * width, 0.37f), w = {0.5f, 0.25f, 2.0f, 1.0f, -1.0f, 0.125f};
  std::vector<float> out(T * width);
  WeightedRowSum(rows.data(), w.data(), T, k, width, out.data());
  for (size_t t = 0; t < T; ++t) {
    for (size_t c = 0; c < width; ++c) {
      float want = 0.0f;
      for (size_t j = 0; j < k; ++j) want += w[t * k + j] * rows[(t * k + j) * width + c];
      EXPECT_NEAR(out[t * width + c], want, 1e-6f);
    }
  }
}

TEST(LayerOpsTest, RoutingTopKWithTiesAndRenormalisation) {
  const float logits[] = {0.0f, 2.0f, 0.0f, -1.0f};
  const float bias[] = {0.0f, 0.0f, 0.0f, 0.0f};
  int32_t experts[2];
  float weights[2];
  RouteSigmoidTopK(logits, 1, 4, bias, 2, /*renormalize=*/true, 2.0f, experts, weights);
  EXPECT_EQ(experts[0], 1);
  EXPECT_EQ(experts[1], 0);  // tie between experts 0 and 2: the lower index
  EXPECT_NEAR(weights[0] + weights[1], 2.0f, 1e-6f);
  const float biased[] = {0.0f, 0.0f, 1.0f, 0.0f};  // the bias selects, the score weighs
  RouteSigmoidTopK(logits, 1, 4, biased, 1, /*renormalize=*/false, 1.0f, experts, weights);
  EXPECT_EQ(experts[0], 2);
  EXPECT_FLOAT_EQ(weights[0], Sig(0.0f));
}

TEST(LayerOpsTest, DecayGateBothForms) {
  std::vector<float> g = {0.5f, -0.25f, 1.0f, 2.0f}, dt = {0.1f, 0.2f, 0.3f, 0.4f}, a = {1.5f, 0.5f};
  std::vector<float> bounded = g, soft = g;
  KdaDecayGate(bounded.data(), dt.data(), a.data(), 1, 2, 2, true, -5.0f);
  KdaDecayGate(soft.data(), dt.data(), a.data(), 1, 2, 2, false, 0.0f);
  EXPECT_FLOAT_EQ(bounded[3], -5.0f * Sig(0.5f * (2.0f + 0.4f)));
  EXPECT_FLOAT_EQ(soft[0], -1.5f * std::log1p(std::exp(0.5f + 0.1f)));
}

TEST(LayerOpsTest, ConvContinuesAcrossChunksThroughItsTail) {
  const size_t W = 4, P = 3, rows = 7;
  std::vector<float> raw = Ramp(rows * P, 0.9f), taps = Ramp(P * W, 0.5f, 0.3f);
  std::vector<float> whole(rows * P), pieces(rows * P), tail_a((W - 1) * P, 0.0f), tail_b = tail_a;
  std::vector<float> scratch(W * P);
  CausalConvSilu(raw.data(), taps.data(), W, P, rows, 0, P, tail_a.data(), scratch.data(), whole.data());
  CausalConvSilu(raw.data(), taps.data(), W, P, 2, 0, P, tail_b.data(), scratch.data(), pieces.data());
  CausalConvSilu(raw.data() + 2 * P, taps.data(), W, P, 5, 0, P, tail_b.data(), scratch.data(),
                 pieces.data() + 2 * P);
  EXPECT_EQ(whole, pieces);
  EXPECT_EQ(tail_a, tail_b);
  float c = 0.0f;  // row 5, channel 1 written out (fused sums and hwy's exp: within a bf16 step)
  for (size_t j = 0; j < W; ++j) c += taps[1 * W + j] * raw[(5 - (W - 1) + j) * P + 1];
  const float want = RoundBf16(c * Sig(c));
  EXPECT_NEAR(whole[5 * P + 1], want, std::abs(want) / 128.0f);
}

TEST(LayerOpsTest, LatentAttentionIsSoftmaxWeightedRows) {
  const size_t width = 6, ctx_width = 4, visible = 3;
  std::vector<float> q = Ramp(width, 0.4f), r0 = Ramp(width, 0.2f), r1 = Ramp(width, 0.6f, 1.0f),
                     r2 = Ramp(width, 0.9f, 2.0f);
  const float* rows[] = {r0.data(), r1.data(), r2.data()};
  std::vector<float> scores(visible), ctx(ctx_width);
  LatentAttention(q.data(), rows, visible, width, ctx_width, 0.5f, scores.data(), ctx.data());
  double e[3], sum = 0;
  for (size_t j = 0; j < visible; ++j) {
    double dot = 0;
    for (size_t c = 0; c < width; ++c) dot += q[c] * rows[j][c];
    e[j] = std::exp(dot * 0.5);
    sum += e[j];
  }
  for (size_t c = 0; c < ctx_width; ++c) {
    double want = 0;
    for (size_t j = 0; j < visible; ++j) want += e[j] / sum * rows[j][c];
    EXPECT_NEAR(ctx[c], want, 1e-5);
  }
}

// Chunks of the rows, each with its softmax statistics, joined by CombineLatentChunks: the attention over
// all the rows (to fp32 rounding); one chunk joins to itself bit for bit. The statistics are the softmax's
// largest score and its sum of exp(score - largest).
TEST(LayerOpsTest, LatentChunksJoinToTheAttentionOverAllRows) {
  const size_t width = 40, ctx_width = 32, visible = 70;
  std::vector<float> q = Ramp(width, 0.4f), src = Ramp(visible * width, 0.071f, 0.5f);
  std::vector<const float*> rows;
  for (size_t j = 0; j < visible; ++j) rows.push_back(src.data() + j * width);
  std::vector<float> scores(visible), whole(ctx_width);
  LatentAttention(q.data(), rows.data(), visible, width, ctx_width, 0.3f, scores.data(), whole.data());
  for (const size_t chunk : {size_t{16}, size_t{32}, size_t{70}}) {
    const size_t chunks = (visible + chunk - 1) / chunk;
    std::vector<float> chunk_ctx(chunks * ctx_width), max(chunks), sum(chunks), joined(ctx_width);
    for (size_t c = 0; c < chunks; ++c) {
      const size_t n = std::min(chunk, visible - c * chunk);
      LatentAttention(q.data(), rows.data() + c * chunk, n, width, ctx_width, 0.3f, scores.data(),
                      chunk_ctx.data() + c * ctx_width, &max[c], &sum[c]);
      double largest = -1e300, total = 0;
      for (size_t j = 0; j < n; ++j) {
        double dot = 0;
        for (size_t i = 0; i < width; ++i) dot += q[i] * rows[c * chunk + j][i];
        largest = std::max(largest, 0.3 * dot);
      }
      for (size_t j = 0; j < n; ++j) {
        double dot = 0;
        for (size_t i = 0; i < width; ++i) dot += q[i] * rows[c * chunk + j][i];
        total += std::exp(0.3 * dot - largest);
      }
      EXPECT_NEAR(max[c], largest, 1e-5 * std::max(1.0, std::abs(largest)));
      EXPECT_NEAR(sum[c], total, 1e-5 * total);
    }
    CombineLatentChunks(chunk_ctx.data(), max.data(), sum.data(), chunks, ctx_width, joined.data());
    if (chunks == 1) {
      EXPECT_EQ(joined, whole);
    }
    for (size_t c = 0; c < ctx_width; ++c) EXPECT_NEAR(joined[c], whole[c], 1e-5) << "chunks of " << chunk;
  }
}

// The bf16 cache: storing rounds to bf16, and attention over bf16 rows is the fp32 attention over the
// same (bf16-valued) rows, bit for bit, for an odd width as for a width of 64 * k.
TEST(LayerOpsTest, LatentAttentionOverBf16RowsEqualsFp32OverTheSameValues) {
  for (const size_t width : {37, 128}) {
    const size_t ctx_width = width - 8, visible = 9;
    std::vector<float> q = Ramp(width, 0.4f), src = Ramp(visible * width, 0.13f, 0.5f);
    std::vector<std::vector<bf16>> stored(visible, std::vector<bf16>(width));
    std::vector<bf16*> dst;
    for (auto& r : stored) dst.push_back(r.data());
    StoreRowsBf16(src.data(), width, dst.data(), visible);
    std::vector<std::vector<float>> wide(visible, std::vector<float>(width));
    std::vector<const bf16*> rows16;
    std::vector<const float*> rows32;
    for (size_t j = 0; j < visible; ++j) {
      for (size_t c = 0; c < width; ++c) {
        ASSERT_EQ(stored[j][c].bits, FloatToBf16(src[j * width + c]).bits);
        wide[j][c] = Bf16ToFloat(stored[j][c]);
      }
      rows16.push_back(stored[j].data());
      rows32.push_back(wide[j].data());
    }
    std::vector<float> scores16(visible), ctx16(ctx_width), scores32(visible), ctx32(ctx_width);
    LatentAttentionBf16(q.data(), rows16.data(), visible, width, ctx_width, 0.3f, scores16.data(),
                        ctx16.data());
    LatentAttention(q.data(), rows32.data(), visible, width, ctx_width, 0.3f, scores32.data(), ctx32.data());
    EXPECT_EQ(scores16, scores32);
    EXPECT_EQ(ctx16, ctx32);
  }
}

// Several queries over the same fp32 rows: each query's scores, context and softmax statistics are bit for
// bit LatentAttention's for that query alone (a partial tile of queries and of rows included).
TEST(LayerOpsTest, LatentAttentionOfSeveralQueriesOverFp32RowsEqualsOneAtATime) {
  const size_t width = 37, ctx_width = 29, visible = 11, num_queries = 6;
  const std::vector<float> src = Ramp(visible * width, 0.13f, 0.5f), q = Ramp(num_queries * width, 0.4f);
  std::vector<const float*> rows, queries;
  for (size_t j = 0; j < visible; ++j) rows.push_back(src.data() + j * width);
  for (size_t g = 0; g < num_queries; ++g) queries.push_back(q.data() + g * width);
  std::vector<std::vector<float>> ctx(num_queries, std::vector<float>(ctx_width));
  std::vector<float*> ctx_out;
  for (auto& c : ctx) ctx_out.push_back(c.data());
  std::vector<float> scores(num_queries * visible), max(num_queries), sum(num_queries);
  LatentAttentionQueries(queries.data(), num_queries, rows.data(), visible, width, ctx_width, 0.3f,
                         scores.data(), ctx_out.data(), max.data(), sum.data());
  for (size_t g = 0; g < num_queries; ++g) {
    std::vector<float> one_scores(visible), one_ctx(ctx_width);
    float one_max = 0, one_sum = 0;
    LatentAttention(queries[g], rows.data(), visible, width, ctx_width, 0.3f, one_scores.data(),
                    one_ctx.data(), &one_max, &one_sum);
    EXPECT_EQ(std::vector<float>(scores.begin() + g * visible, scores.begin() + (g + 1) * visible),
              one_scores)
        << "query " << g;
    EXPECT_EQ(ctx[g], one_ctx) << "query " << g;
    EXPECT_EQ(max[g], one_max) << "query " << g;
    EXPECT_EQ(sum[g], one_sum) << "query " << g;
  }
}

}  // namespace
}  // namespace k3::kernels
