// MLA: the absorbed latent form (prefill chunk and token-by-token decode) against the expanded form
// written out here (per-head k_nope / v = Wkvb c, full 192-wide keys), on the tiny K3 layer weights.
#include "src/model/mla.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "src/kernels/ops.h"
#include "src/model/testing/random_model.h"

namespace k3::model {
namespace {

// y [T, rows(W)] = bf16(x [T, cols(W)] @ W^T), the reference's nn.Linear.
void Linear(const float* x, int64_t T, const Bf16Matrix& W, float* y) {
  kernels::MatMulBf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                      static_cast<size_t>(W.rows), y, nullptr);
  kernels::RoundToBf16(y, static_cast<size_t>(T * W.rows));
}

// Expanded (non-absorbed) gated MLA for a whole sequence from position 0: x [T, D] -> out [T, D].
std::vector<float> ExpandedMla(const io::ModelConfig& cfg, const MlaWeights& w, const std::vector<float>& x,
                               int64_t T) {
  const int64_t D = cfg.hidden_size, H = cfg.mla_num_heads, nope = cfg.qk_nope_head_dim;
  const int64_t Rp = cfg.qk_rope_head_dim, Q = nope + Rp, R = cfg.kv_lora_rank, Vh = cfg.v_head_dim;
  std::vector<float> q_low(T * cfg.q_lora_rank), q(T * H * Q), ckv(T * (R + Rp));
  Linear(x.data(), T, w.q_a_proj, q_low.data());
  for (int64_t t = 0; t < T; ++t) {
    kernels::RmsNorm(&q_low[t * cfg.q_lora_rank], w.q_a_norm.data(), cfg.q_lora_rank, cfg.rms_norm_eps,
                     &q_low[t * cfg.q_lora_rank]);
  }
  Linear(q_low.data(), T, w.q_b_proj, q.data());
  Linear(x.data(), T, w.kv_a_proj, ckv.data());
  for (int64_t t = 0; t < T; ++t) {
    kernels::RmsNorm(&ckv[t * (R + Rp)], w.kv_a_norm.data(), R, cfg.rms_norm_eps, &ckv[t * (R + Rp)]);
  }
  // kv [T, H, nope + Vh] = c @ Wkvb^T (fp32, the exact values the absorbed form uses implicitly).
  std::vector<float> c(T * R), kv(T * H * (nope + Vh));
  for (int64_t t = 0; t < T; ++t) std::copy_n(&ckv[t * (R + Rp)], R, &c[t * R]);
  kernels::MatMulBf16(c.data(), T, R, w.kv_b_proj.data, H * (nope + Vh), kv.data(), nullptr);
  std::vector<float> o(T * H * Vh, 0.0f), p(T);
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t i = 0; i < T; ++i) {
      const float* qi = &q[(i * H + h) * Q];
      for (int64_t j = 0; j <= i; ++j) {
        const float* kj = &kv[(j * H + h) * (nope + Vh)];
        float s = 0.0f;
        for (int64_t d = 0; d < nope; ++d) s += qi[d] * kj[d];
        for (int64_t d = 0; d < Rp; ++d) s += qi[nope + d] * ckv[j * (R + Rp) + R + d];
        p[j] = s / std::sqrt(static_cast<float>(Q));
      }
      kernels::Softmax(p.data(), i + 1);
      for (int64_t j = 0; j <= i; ++j) {
        for (int64_t d = 0; d < Vh; ++d)
          o[(i * H + h) * Vh + d] += p[j] * kv[(j * H + h) * (nope + Vh) + nope + d];
      }
    }
  }
  kernels::RoundToBf16(o.data(), o.size());
  std::vector<float> gate(T * H * Vh), out(T * D);
  Linear(x.data(), T, w.g_proj, gate.data());
  for (size_t i = 0; i < o.size(); ++i) o[i] = RoundBf16(o[i] / (1.0f + std::exp(-gate[i])));
  Linear(o.data(), T, w.o_proj, out.data());
  return out;
}

TEST(MlaTest, AbsorbedMatchesExpanded) {
  io::ModelConfig cfg = testing::TinyK3Config();
  auto tensors = testing::MakeRandomTensors(cfg, 21);
  auto weights = BindWeights(cfg, [&](const std::string& n) { return tensors->Find(n); });
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  const LayerWeights& layer = (*weights)->layers[2];
  ASSERT_EQ(layer.attention, io::AttentionKind::kMla);
  const int64_t T = 20, D = cfg.hidden_size;
  std::vector<float> x(T * D);
  uint32_t s = 5;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = RoundBf16(static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 700.0f);
  }
  const std::vector<float> want = ExpandedMla(cfg, layer.mla, x, T);

  // Prefill: the whole sequence as one chunk.
  kernels::StepEnv env;
  ModelSequenceState prefill_state(cfg);
  prefill_state.ReserveMlaTokens(T);
  SequenceSegment seg{&prefill_state, 0, T, 0};
  std::vector<float> prefill(T * D);
  MlaForward({cfg, T, std::span(&seg, 1), env}, layer.mla, layer.mla_index, x.data(), prefill.data());

  // Decode: one token at a time against the growing latent cache.
  ModelSequenceState decode_state(cfg);
  std::vector<float> decode(T * D);
  for (int64_t t = 0; t < T; ++t) {
    decode_state.ReserveMlaTokens(t + 1);
    SequenceSegment one{&decode_state, 0, 1, t};
    MlaForward({cfg, 1, std::span(&one, 1), env}, layer.mla, layer.mla_index, x.data() + t * D,
               decode.data() + t * D);
    decode_state.Advance(1);
  }
  // The two forms differ only by fp32 rounding order before the bf16 casts (a cast that flips by one
  // bf16 ulp moves a row by ~1e-3 at this width); a wrong head split, scale or mask moves it by O(1).
  EXPECT_LE(testing::MaxRowRelativeError(prefill.data(), want.data(), T, D), 3e-3);
  EXPECT_LE(testing::MaxRowRelativeError(decode.data(), want.data(), T, D), 3e-3);
  EXPECT_LE(testing::MaxRowRelativeError(decode.data(), prefill.data(), T, D), 1e-5);
}

}  // namespace
}  // namespace k3::model
