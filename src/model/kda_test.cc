// KDA layer: a prompt fed in one chunk, in pieces, and token by token. With the default recurrent
// prefill every result is bit-identical. With the chunked form (64 + 6 tokens) the recurrent state
// agrees to fp32 noise, conv tails exactly, and outputs except where fp32 noise flips a bf16 rounding of
// o (rare, one row at a time: the state never sees the rounded o). Both gate forms (K3 lower bound +
// full-rank gate, Kimi Linear softplus + low-rank gate).
#include "src/model/kda.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "src/model/testing/random_model.h"

namespace k3::model {
namespace {

struct KdaRun {
  std::vector<float> out;        // [T, D]
  std::vector<float> recurrent;  // [H, K, V]
  std::vector<float> conv_tail;  // [3, W-1, P]
};

KdaRun RunInPieces(const io::ModelConfig& cfg, const LayerWeights& layer, const std::vector<float>& x,
                   int64_t T, const std::vector<int64_t>& pieces, ThreadPool* pool, KdaPrefillForm form) {
  const int64_t D = cfg.hidden_size;
  ModelSequenceState state(cfg);
  kernels::StepEnv env{.pool = pool};
  KdaRun run;
  run.out.resize(T * D);
  int64_t pos = 0;
  for (int64_t len : pieces) {
    SequenceSegment seg{&state, 0, len, pos};
    const LayerStep step{cfg, len, std::span(&seg, 1), env, form};
    KdaForward(step, layer.kda, layer.kda_index, x.data() + pos * D, run.out.data() + pos * D);
    state.Advance(len);
    pos += len;
  }
  EXPECT_EQ(pos, T);
  run.recurrent = state.kda(layer.kda_index).recurrent;
  run.conv_tail = state.kda(layer.kda_index).conv_tail;
  return run;
}

void ExpectSameRun(const KdaRun& got, const KdaRun& want, int64_t T, int64_t D) {
  EXPECT_LE(
      testing::MaxRowRelativeError(got.recurrent.data(), want.recurrent.data(), 1, want.recurrent.size()),
      1e-5);
  EXPECT_EQ(got.conv_tail, want.conv_tail);
  int64_t rows_off = 0;
  for (int64_t t = 0; t < T; ++t) {
    const double err = testing::MaxRowRelativeError(got.out.data() + t * D, want.out.data() + t * D, 1, D);
    EXPECT_LE(err, 2e-2) << "row " << t;
    rows_off += err > 1e-5;
  }
  EXPECT_LE(rows_off, T / 10) << "rows differing by more than fp32 noise";
}

TEST(KdaLayerTest, ChunkingKeepsStateAndOutputs) {
  for (bool k3 : {true, false}) {
    SCOPED_TRACE(k3 ? "kimi_k3" : "kimi_linear");
    io::ModelConfig cfg = k3 ? testing::TinyK3Config() : testing::TinyKimiLinearConfig();
    auto tensors = testing::MakeRandomTensors(cfg, 13);
    auto weights = BindWeights(cfg, [&](const std::string& n) { return tensors->Find(n); });
    ASSERT_TRUE(weights.ok()) << weights.status().ToString();
    const LayerWeights& layer = (*weights)->layers[0];
    ASSERT_EQ(layer.attention, io::AttentionKind::kKda);
    const int64_t T = 70, D = cfg.hidden_size;
    std::vector<float> x(T * D);
    uint32_t s = 17;
    for (float& v : x) {
      s = s * 1664525u + 1013904223u;
      v = RoundBf16(static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 600.0f);
    }
    ThreadPool pool(2);
    const std::vector<int64_t> by_token(T, 1);
    // Default (recurrent) prefill: exactly the decode arithmetic, whatever the pieces.
    const KdaRun one = RunInPieces(cfg, layer, x, T, {T}, nullptr, KdaPrefillForm::kRecurrent);
    for (float v : one.out) ASSERT_TRUE(std::isfinite(v));
    for (const std::vector<int64_t>& pieces : {std::vector<int64_t>{30, 37, 1, 2}, by_token}) {
      const KdaRun got = RunInPieces(cfg, layer, x, T, pieces, &pool, KdaPrefillForm::kRecurrent);
      EXPECT_EQ(got.out, one.out);
      EXPECT_EQ(got.recurrent, one.recurrent);
      EXPECT_EQ(got.conv_tail, one.conv_tail);
    }
    // Chunked form: same state up to fp32 noise, outputs up to rare bf16 rounding flips of o.
    const KdaRun chunked = RunInPieces(cfg, layer, x, T, {T}, nullptr, KdaPrefillForm::kChunked);
    ExpectSameRun(chunked, one, T, D);
    ExpectSameRun(RunInPieces(cfg, layer, x, T, {30, 37, 1, 2}, &pool, KdaPrefillForm::kChunked), one, T, D);
    // The state is not trivially zero or unchanged.
    double norm = 0.0;
    for (float v : one.recurrent) norm += v * v;
    EXPECT_GT(norm, 1e-3);
  }
}

}  // namespace
}  // namespace k3::model
