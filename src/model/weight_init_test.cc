// Tests of the generator's random values and encodings: PRNG determinism and moments, per-InitKind
// scales, and MXFP4 quantisation (scale choice, nearest-E2M1 rounding, nibble order) against
// kernels::DequantMxfp4Row.
#include "src/model/weight_init.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/kernels/ops.h"
#include "src/model/presets.h"

namespace k3::model {
namespace {

constexpr float kE2M1Magnitudes[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// Distance from x to the nearest representable E2M1 value (brute force over the 16 codes).
float DistanceToGrid(float x) {
  float best = std::numeric_limits<float>::infinity();
  for (float m : kE2M1Magnitudes) best = std::min({best, std::fabs(x - m), std::fabs(x + m)});
  return best;
}

const io::ModelConfig& TinyK3Config() {
  static const io::ModelConfig cfg = FindGeneratorPreset("tiny-k3").value().config;
  return cfg;
}

const TensorSpec& FindSpec(const std::vector<TensorSpec>& specs, InitKind kind,
                           const std::string& contains = "") {
  for (const TensorSpec& spec : specs) {
    if (spec.init == kind && spec.name.find(contains) != std::string::npos) return spec;
  }
  ADD_FAILURE() << "no tensor of the wanted kind containing '" << contains << "'";
  return specs.front();
}

TEST(RandomStreamTest, SameSeedSameSequenceDifferentSeedDifferent) {
  RandomStream a(42), b(42), c(43);
  int equal_to_c = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    equal_to_c += x == c.Next();
  }
  EXPECT_EQ(equal_to_c, 0);
}

TEST(RandomStreamTest, NormalHasUnitVarianceAndBoundedTails) {
  RandomStream rng(7);
  const int n = 200000;
  double sum = 0, sum_sq = 0, max_abs = 0;
  for (int i = 0; i < n; ++i) {
    const double x = rng.Normal();
    sum += x;
    sum_sq += x * x;
    max_abs = std::max(max_abs, std::fabs(x));
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
  EXPECT_LE(max_abs, 2.0 * std::sqrt(3.0) + 1e-6);
  EXPECT_GT(max_abs, 3.0);  // real tails, not a clipped uniform
}

TEST(RandomStreamTest, UniformIsInsideTheOpenInterval) {
  RandomStream rng(9);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.Uniform();
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(TensorSeedTest, DependsOnSeedAndName) {
  EXPECT_EQ(TensorSeed(0, "a.weight"), TensorSeed(0, "a.weight"));
  EXPECT_NE(TensorSeed(0, "a.weight"), TensorSeed(1, "a.weight"));
  EXPECT_NE(TensorSeed(0, "a.weight"), TensorSeed(0, "b.weight"));
  EXPECT_NE(RowStream(5, 0).Next(), RowStream(5, 1).Next());
}

TEST(InitRowTest, LinearStdFollowsFanIn) {
  const io::ModelConfig& cfg = TinyK3Config();
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  const TensorSpec& spec = FindSpec(specs, InitKind::kLinear, "mlp.gate_proj");
  const int64_t rows = LogicalRowCount(spec), n = LogicalRowLength(spec);
  ASSERT_EQ(n, cfg.hidden_size);
  std::vector<float> row(n);
  double sum_sq = 0;
  for (int64_t r = 0; r < rows; ++r) {
    InitRow(cfg, spec, TensorSeed(0, spec.name), r, row.data());
    for (float v : row) sum_sq += double{v} * v;
  }
  EXPECT_NEAR(std::sqrt(sum_sq / double(rows * n)), 1.0 / std::sqrt(double(n)), 0.05 / std::sqrt(double(n)));
}

TEST(InitRowTest, OutputHeadIsScaledByTheGain) {
  const io::ModelConfig& cfg = TinyK3Config();
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  const TensorSpec& head = FindSpec(specs, InitKind::kLinear, "lm_head.weight");
  std::vector<float> row(LogicalRowLength(head));
  double sum_sq = 0;
  for (int64_t r = 0; r < LogicalRowCount(head); ++r) {
    InitRow(cfg, head, TensorSeed(3, head.name), r, row.data());
    for (float v : row) sum_sq += double{v} * v;
  }
  const double rms = std::sqrt(sum_sq / double(LogicalRowCount(head) * row.size()));
  EXPECT_NEAR(rms * std::sqrt(double(cfg.hidden_size)), kOutputHeadGain, 0.05 * kOutputHeadGain);
}

// RMS of all rows of `spec` drawn with seed 3.
double TensorRms(const io::ModelConfig& cfg, const TensorSpec& spec) {
  std::vector<float> row(LogicalRowLength(spec));
  double sum_sq = 0;
  for (int64_t r = 0; r < LogicalRowCount(spec); ++r) {
    InitRow(cfg, spec, TensorSeed(3, spec.name), r, row.data());
    for (float v : row) sum_sq += double{v} * v;
  }
  return std::sqrt(sum_sq / double(LogicalRowCount(spec) * row.size()));
}

TEST(InitRowTest, BranchOutputsQueriesAndRoutersHaveTheirGains) {
  for (const char* preset : {"tiny-k3", "tiny-kimi-linear"}) {
    const io::ModelConfig cfg = FindGeneratorPreset(preset).value().config;
    int branch_outputs = 0, queries = 0;
    for (const TensorSpec& spec : ListTensors(cfg)) {
      if (spec.init != InitKind::kLinear && spec.init != InitKind::kMxfp4Packed) continue;
      const std::string& n = spec.name;
      const bool branch_output =
          n.ends_with("self_attn.o_proj.weight") || n.ends_with("mlp.down_proj.weight") ||
          n.ends_with("shared_experts.down_proj.weight") || n.ends_with("routed_expert_up_proj.weight") ||
          n.find(".w2.weight") != std::string::npos;
      const bool query = n.ends_with("_res_proj.weight");
      const float want = branch_output                    ? kResidualBranchGain
                         : query                          ? kAttnResQueryGain
                         : n.ends_with("lm_head.weight")  ? kOutputHeadGain
                         : n.ends_with("moe.gate.weight") ? kRouterGain
                                                          : 1.0f;
      EXPECT_EQ(LinearInitGain(cfg, spec), want) << preset << " " << n;
      branch_outputs += branch_output;
      queries += query;
    }
    EXPECT_GT(branch_outputs, 10) << preset;
    EXPECT_EQ(queries > 0, cfg.has_attn_res()) << preset;
  }
  // The values follow the gain (a bf16 o_proj and an MXFP4 w2 before quantisation).
  const io::ModelConfig& cfg = TinyK3Config();
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  for (const char* name :
       {"self_attn.o_proj.weight", "experts.0.w2.weight_packed", "routed_expert_down_proj.weight"}) {
    const TensorSpec& spec =
        FindSpec(specs, name[0] == 'e' ? InitKind::kMxfp4Packed : InitKind::kLinear, name);
    const double want = LinearInitGain(cfg, spec) / std::sqrt(double(spec.fan_in));
    EXPECT_NEAR(TensorRms(cfg, spec), want, 0.05 * want) << name;
  }
  EXPECT_EQ(LinearInitGain(cfg, FindSpec(specs, InitKind::kLinear, "routed_expert_down_proj.weight")), 1.0f);
}

TEST(InitRowTest, RouterBiasHasItsSpread) {
  const GeneratorPreset preset = FindGeneratorPreset("mini-k3").value();  // a copy: the Result is temporary
  const io::ModelConfig& cfg = preset.config;
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  const TensorSpec& spec = FindSpec(specs, InitKind::kRouterBias, "e_score_correction_bias");
  ASSERT_EQ(LogicalRowLength(spec), cfg.num_experts);
  EXPECT_NEAR(TensorRms(cfg, spec), kRouterBiasStd, 0.25 * kRouterBiasStd);
}

TEST(InitRowTest, NormWeightsAreNearOne) {
  const io::ModelConfig& cfg = TinyK3Config();
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  const TensorSpec& spec = FindSpec(specs, InitKind::kNormWeight, "input_layernorm");
  std::vector<float> row(LogicalRowLength(spec));
  InitRow(cfg, spec, TensorSeed(0, spec.name), 0, row.data());
  bool any_not_one = false;
  for (float v : row) {
    EXPECT_NEAR(v, 1.0f, 0.1f);
    any_not_one |= v != 1.0f;
  }
  EXPECT_TRUE(any_not_one);
}

TEST(InitRowTest, ALogIsLogOfOneToSixteenAndZeroInThePadding) {
  const io::ModelConfig& cfg = TinyK3Config();
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  const TensorSpec& spec = FindSpec(specs, InitKind::kALog);
  ASSERT_EQ(LogicalRowCount(spec), 1);
  ASSERT_EQ(LogicalRowLength(spec), 128);  // K3 pads A_log to 128 entries
  std::vector<float> row(128);
  InitRow(cfg, spec, TensorSeed(0, spec.name), 0, row.data());
  for (int64_t i = 0; i < 128; ++i) {
    if (i < cfg.kda_num_heads) {
      EXPECT_GT(row[i], 0.0f);
      EXPECT_LT(row[i], std::log(16.0f));
    } else {
      EXPECT_EQ(row[i], 0.0f) << "padding entry " << i;
    }
  }
}

TEST(Mxfp4Test, NearestCodeMatchesBruteForce) {
  for (int i = -1400; i <= 1400; ++i) {
    const float x = static_cast<float>(i) / 200.0f;  // hits every midpoint exactly
    const uint8_t code = NearestE2M1Code(x);
    const float value = kernels::E2M1ToFloat(code);
    if (std::fabs(x) <= 6.0f) {
      EXPECT_EQ(std::fabs(x - value), DistanceToGrid(x)) << "x = " << x;
    } else {
      EXPECT_EQ(value, std::copysign(6.0f, x)) << "x = " << x;
    }
    if (x != 0.0f && value != 0.0f) {
      EXPECT_EQ(std::signbit(x), std::signbit(value)) << "x = " << x;
    }
  }
  // Midpoints go to the even code; past 6 saturates.
  EXPECT_EQ(NearestE2M1Code(0.25f), 0);
  EXPECT_EQ(NearestE2M1Code(0.75f), 2);
  EXPECT_EQ(NearestE2M1Code(1.25f), 2);
  EXPECT_EQ(NearestE2M1Code(2.5f), 4);
  EXPECT_EQ(NearestE2M1Code(5.0f), 6);
  EXPECT_EQ(NearestE2M1Code(100.0f), 7);
  EXPECT_EQ(NearestE2M1Code(-100.0f), 15);
  EXPECT_EQ(NearestE2M1Code(-0.1f), 8);  // -0
}

TEST(Mxfp4Test, GroupScaleIsTheSmallestPowerOfTwoThatFitsTheMax) {
  RandomStream rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    float group[32];
    const float magnitude = std::ldexp(1.0f, trial % 40 - 20);
    for (float& v : group) v = magnitude * rng.Normal();
    float max_abs = 0;
    for (float v : group) max_abs = std::max(max_abs, std::fabs(v));
    const uint8_t s = Mxfp4GroupScale(group, 32);
    const float scale = kernels::E8M0ToFloat(s);
    EXPECT_LE(max_abs / scale, 6.0f);
    EXPECT_GT(max_abs / (scale / 2), 6.0f);
  }
  // Exact boundaries: 6 fits 2^0, 6.0001 needs 2^1, 3 fits 2^-1.
  float group[32] = {};
  EXPECT_EQ(Mxfp4GroupScale(group, 32), 127);  // all zero
  group[5] = -6.0f;
  EXPECT_EQ(Mxfp4GroupScale(group, 32), 127);
  group[5] = 6.0001f;
  EXPECT_EQ(Mxfp4GroupScale(group, 32), 128);
  group[5] = 3.0f;
  EXPECT_EQ(Mxfp4GroupScale(group, 32), 126);
}

TEST(Mxfp4Test, QuantizedRowDequantisesToTheNearestGridValues) {
  RandomStream rng(13);
  const size_t n = 256;
  std::vector<float> row(n), back(n);
  for (size_t i = 0; i < n; ++i) row[i] = 0.05f * rng.Normal() * (i % 64 < 32 ? 1.0f : 30.0f);
  std::vector<uint8_t> packed(n / 2), scales(n / 32);
  QuantizeMxfp4Row(row.data(), n, packed.data(), scales.data());
  kernels::DequantMxfp4Row(packed.data(), scales.data(), n, back.data());
  for (size_t i = 0; i < n; ++i) {
    const float scale = kernels::E8M0ToFloat(scales[i / 32]);
    EXPECT_EQ(std::fabs(row[i] / scale - back[i] / scale), DistanceToGrid(row[i] / scale)) << "column " << i;
  }
  // Low nibble holds the even column.
  EXPECT_EQ(packed[0] & 0x0f, NearestE2M1Code(row[0] / kernels::E8M0ToFloat(scales[0])));
  EXPECT_EQ(packed[0] >> 4, NearestE2M1Code(row[1] / kernels::E8M0ToFloat(scales[0])));
}

}  // namespace
}  // namespace k3::model
