// Tests of the SIMD kernels (ops.h) against the scalar references in ops_scalar.cc and, for bf16-rounded
// outputs, against a double-precision evaluation of the formula. Every test runs once per SIMD target
// compiled into k3_kernels that this CPU supports (hwy::SetSupportedTargetsForTest), over lengths
// 0..2 x max lanes + a few, odd shapes and pointers misaligned by 1..3 elements.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "src/base/bf16.h"
#include "src/base/thread_pool.h"
#include "src/kernels/kda_core.h"
#include "src/kernels/layer_ops.h"
#include "src/kernels/matmul_blocking.h"
#include "src/kernels/matmul_dpbf16.h"
#include "src/kernels/ops.h"

namespace k3::kernels {
namespace {

constexpr size_t kMaxLanes = 16;  // AVX-512 fp32
constexpr size_t kMaxLength = 2 * kMaxLanes + 5;

// The targets of k3_kernels this CPU can run: those for which forcing the target makes the dispatch
// report that target's name.
std::vector<int64_t> CompiledTargets() {
  std::vector<int64_t> targets;
  const int64_t supported = hwy::SupportedTargets();
  for (int bit = 0; bit < 63; ++bit) {
    const int64_t target = int64_t{1} << bit;
    if ((supported & target) == 0) continue;
    hwy::SetSupportedTargetsForTest(target);
    if (std::string(KernelTargetName()) == hwy::TargetName(target)) targets.push_back(target);
  }
  hwy::SetSupportedTargetsForTest(0);
  return targets;
}

// Runs body() once per target, with the target in the failure messages.
void ForEachTarget(const std::function<void()>& body) {
  for (int64_t target : CompiledTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Runs `body` with the bf16 dot-product path on (where the CPU has it) and off (MatMulBf16 and bf16 jobs
// of MatMulGroup then take each target's fp32 path for every row).
void ForEachBf16Path(const std::function<void()>& body) {
  for (bool dot_products : {true, false}) {
    SetBf16DotProducts(dot_products);
    SCOPED_TRACE(dot_products && Bf16DotProductsActive() ? "bf16 dot products" : "fp32 path");
    body();
  }
  SetBf16DotProducts(true);
}

std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

std::vector<float> RandomBf16Values(std::mt19937& rng, size_t n, float lo, float hi) {
  std::vector<float> v = RandomFloats(rng, n, lo, hi);
  for (float& f : v) f = RoundBf16(f);
  return v;
}

std::vector<bf16> RandomBf16(std::mt19937& rng, size_t n, float lo, float hi) {
  std::vector<bf16> v(n);
  for (bf16& b : v) b = FloatToBf16(std::uniform_real_distribution<float>(lo, hi)(rng));
  return v;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The bf16 values an exact (double) result may round to, allowing for fp32 evaluation error: the
// nearest-even bf16, plus the other neighbour when `exact` lies within `rel` (relative) of the midpoint.
std::vector<float> Bf16Candidates(double exact, double rel = 2e-5) {
  const float nearest = RoundBf16(static_cast<float>(exact));
  std::vector<float> out{nearest};
  const float lower = RoundBf16(static_cast<float>(exact * (1 - rel)));
  const float upper = RoundBf16(static_cast<float>(exact * (1 + rel)));
  if (lower != nearest) out.push_back(lower);
  if (upper != nearest) out.push_back(upper);
  return out;
}

bool OneOf(float got, const std::vector<float>& candidates) {
  return std::find(candidates.begin(), candidates.end(), got) != candidates.end();
}

double SigmoidD(double v) { return 1.0 / (1.0 + std::exp(-v)); }

TEST(DispatchTest, EveryCompiledTargetCanBeChosen) {
  const std::vector<int64_t> targets = CompiledTargets();
  ASSERT_FALSE(targets.empty());
  // Named in the output: scripts/arm64_test.sh checks that each qemu CPU model gets the target it expects.
  std::string names;
  for (int64_t target : targets) names += std::string(names.empty() ? "" : " ") + hwy::TargetName(target);
  std::printf("kernel targets: dispatch picks %s (this CPU runs: %s); bf16 dot products: %s\n",
              KernelTargetName(), names.c_str(), Bf16DotProductsActive() ? "yes" : "no");
  // With no mock, the dispatch picks the best (lowest-bit) compiled target the CPU supports.
  EXPECT_STREQ(KernelTargetName(), hwy::TargetName(targets.front()));
}

// ---- bf16 conversions ------------------------------------------------------------------------------

TEST(OpsTest, RoundToBf16MatchesFloatToBf16Exactly) {
  std::mt19937 rng(1);
  std::vector<float> special = {0.0f,
                                -0.0f,
                                1.0f,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::max(),
                                std::numeric_limits<float>::denorm_min(),
                                std::numeric_limits<float>::min()};
  // Exact ties (low 16 bits 0x8000) with even and odd bf16 mantissas, and a signalling-NaN pattern.
  for (uint32_t bits : {0x3F808000u, 0x3F818000u, 0xBF808000u, 0x7F7F8000u, 0x7F800001u, 0xFF812345u}) {
    float f;
    std::memcpy(&f, &bits, 4);
    special.push_back(f);
  }
  ForEachTarget([&] {
    for (size_t n = 0; n <= kMaxLength; ++n) {
      for (size_t offset = 0; offset <= 3; ++offset) {
        std::vector<float> buffer = RandomFloats(rng, n + offset, -1e4f, 1e4f);
        for (size_t i = 0; i < n; ++i) {
          if (rng() % 3 == 0) buffer[offset + i] = special[rng() % special.size()];
        }
        std::vector<float> want(buffer.begin() + offset, buffer.end());
        RoundToBf16(buffer.data() + offset, n);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(Bits(buffer[offset + i]), uint32_t{FloatToBf16(want[i]).bits} << 16)
              << "n=" << n << " i=" << i;
        }
      }
    }
  });
}

TEST(OpsTest, Bf16ToF32IsExact) {
  std::mt19937 rng(2);
  ForEachTarget([&] {
    for (size_t n = 0; n <= kMaxLength; ++n) {
      for (size_t offset = 0; offset <= 3; ++offset) {
        std::vector<bf16> x(n + offset);
        for (bf16& b : x) b.bits = static_cast<uint16_t>(rng());
        std::vector<float> y(n + offset, -7.0f);
        Bf16ToF32(x.data() + offset, n, y.data() + offset);
        for (size_t i = 0; i < offset; ++i) ASSERT_EQ(y[i], -7.0f);  // nothing written before
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(Bits(y[offset + i]), uint32_t{x[offset + i].bits} << 16);
        }
      }
    }
  });
}

// ---- norms and activations -------------------------------------------------------------------------

TEST(OpsTest, RmsNormRoundsLikeTheFormula) {
  std::mt19937 rng(3);
  const float eps = 1e-5f;
  ForEachTarget([&] {
    size_t disagreements = 0;
    size_t total = 0;
    for (size_t n = 1; n <= kMaxLength + 60; ++n) {
      const size_t offset = n % 4;
      std::vector<float> x = RandomBf16Values(rng, n + offset, -3.0f, 3.0f);
      std::vector<bf16> w = RandomBf16(rng, n + offset, -2.0f, 2.0f);
      std::vector<float> got(n + offset), ref(n + offset);
      RmsNorm(x.data() + offset, w.data() + offset, n, eps, got.data() + offset);
      scalar::RmsNorm(x.data() + offset, w.data() + offset, n, eps, ref.data() + offset);
      double ss = 0;
      for (size_t i = 0; i < n; ++i) ss += double{x[offset + i]} * x[offset + i];
      const double inv = 1.0 / std::sqrt(ss / n + eps);
      for (size_t i = 0; i < n; ++i) {
        std::vector<float> candidates;
        for (float inner : Bf16Candidates(x[offset + i] * inv)) {
          for (float outer : Bf16Candidates(double{Bf16ToFloat(w[offset + i])} * inner))
            candidates.push_back(outer);
        }
        ASSERT_TRUE(OneOf(got[offset + i], candidates))
            << "n=" << n << " i=" << i << " got=" << got[offset + i];
        ASSERT_TRUE(OneOf(ref[offset + i], candidates)) << "reference n=" << n << " i=" << i;
        disagreements += got[offset + i] != ref[offset + i];
        ++total;
      }
    }
    EXPECT_LE(disagreements, total / 50) << "of " << total;
  });
}

TEST(OpsTest, RmsNormInPlace) {
  std::mt19937 rng(4);
  ForEachTarget([&] {
    std::vector<float> x = RandomBf16Values(rng, 37, -3.0f, 3.0f);
    std::vector<bf16> w = RandomBf16(rng, 37, -2.0f, 2.0f);
    std::vector<float> separate(37);
    RmsNorm(x.data(), w.data(), 37, 1e-5f, separate.data());
    RmsNorm(x.data(), w.data(), 37, 1e-5f, x.data());
    EXPECT_EQ(x, separate);
  });
}

TEST(OpsTest, RmsNormNoWeightMatchesReference) {
  std::mt19937 rng(5);
  ForEachTarget([&] {
    for (size_t n = 1; n <= kMaxLength + 30; ++n) {
      const size_t offset = (n + 1) % 4;
      std::vector<float> x = RandomFloats(rng, n + offset, -5.0f, 5.0f);
      std::vector<float> got(n + offset), ref(n + offset);
      RmsNormNoWeight(x.data() + offset, n, 1e-5f, got.data() + offset);
      scalar::RmsNormNoWeight(x.data() + offset, n, 1e-5f, ref.data() + offset);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got[offset + i], ref[offset + i], 2e-6 * std::abs(ref[offset + i]) + 1e-30)
            << n << " " << i;
      }
    }
    std::vector<float> x = RandomFloats(rng, 19, -5.0f, 5.0f), copy = x;
    RmsNormNoWeight(x.data(), 19, 1e-5f, x.data());  // in place
    std::vector<float> ref(19);
    scalar::RmsNormNoWeight(copy.data(), 19, 1e-5f, ref.data());
    for (size_t i = 0; i < 19; ++i) EXPECT_NEAR(x[i], ref[i], 2e-6 * std::abs(ref[i]));
  });
}

TEST(OpsTest, GatedRmsNormRoundsLikeTheFormula) {
  std::mt19937 rng(6);
  const float eps = 1e-5f;
  ForEachTarget([&] {
    size_t disagreements = 0;
    size_t total = 0;
    for (size_t n = 1; n <= kMaxLength + 60; ++n) {
      const size_t offset = (n + 2) % 4;
      std::vector<float> o = RandomBf16Values(rng, n + offset, -3.0f, 3.0f);
      std::vector<float> gate = RandomFloats(rng, n + offset, -12.0f, 12.0f);
      std::vector<float> w = RandomFloats(rng, n + offset, 0.5f, 1.5f);
      if (n > 3) gate[offset] = -120.0f, gate[offset + 1] = 120.0f;  // saturated sigmoid both ways
      std::vector<float> got(n + offset), ref(n + offset);
      GatedRmsNorm(o.data() + offset, gate.data() + offset, w.data() + offset, n, eps, got.data() + offset);
      scalar::GatedRmsNorm(o.data() + offset, gate.data() + offset, w.data() + offset, n, eps,
                           ref.data() + offset);
      double ss = 0;
      for (size_t i = 0; i < n; ++i) ss += double{o[offset + i]} * o[offset + i];
      const double inv = 1.0 / std::sqrt(ss / n + eps);
      for (size_t i = 0; i < n; ++i) {
        const double exact = o[offset + i] * inv * w[offset + i] * SigmoidD(gate[offset + i]);
        const std::vector<float> candidates = Bf16Candidates(exact);
        ASSERT_TRUE(OneOf(got[offset + i], candidates))
            << "n=" << n << " i=" << i << " got=" << got[offset + i];
        ASSERT_TRUE(OneOf(ref[offset + i], candidates)) << "reference n=" << n << " i=" << i;
        disagreements += got[offset + i] != ref[offset + i];
        ++total;
      }
    }
    EXPECT_LE(disagreements, total / 50) << "of " << total;
  });
}

TEST(OpsTest, SituGluRoundsLikeTheFormula) {
  std::mt19937 rng(7);
  const float beta = 4.0f, linear_beta = 25.0f;  // spec §1.2
  ForEachTarget([&] {
    size_t disagreements = 0;
    size_t total = 0;
    for (size_t n = 0; n <= kMaxLength + 100; ++n) {
      const size_t offset = n % 4;
      std::vector<float> a = RandomBf16Values(rng, n + offset, -40.0f, 40.0f);
      std::vector<float> b = RandomBf16Values(rng, n + offset, -80.0f, 80.0f);
      if (n > 2) a[offset] = -200.0f, a[offset + 1] = 0.0f;
      std::vector<float> got(n + offset), ref(n + offset);
      SituGlu(a.data() + offset, b.data() + offset, n, beta, linear_beta, got.data() + offset);
      scalar::SituGlu(a.data() + offset, b.data() + offset, n, beta, linear_beta, ref.data() + offset);
      for (size_t i = 0; i < n; ++i) {
        const double va = a[offset + i], vb = b[offset + i];
        const double exact =
            beta * std::tanh(va / beta) * SigmoidD(va) * (linear_beta * std::tanh(vb / linear_beta));
        const std::vector<float> candidates = Bf16Candidates(exact);
        ASSERT_TRUE(OneOf(got[offset + i], candidates))
            << "a=" << va << " b=" << vb << " got=" << got[offset + i];
        ASSERT_TRUE(OneOf(ref[offset + i], candidates)) << "reference a=" << va << " b=" << vb;
        disagreements += got[offset + i] != ref[offset + i];
        ++total;
      }
    }
    EXPECT_LE(disagreements, total / 50) << "of " << total;
    std::vector<float> a = RandomBf16Values(rng, 21, -9.0f, 9.0f), b = RandomBf16Values(rng, 21, -9.0f, 9.0f);
    std::vector<float> separate(21);
    SituGlu(a.data(), b.data(), 21, beta, linear_beta, separate.data());
    SituGlu(a.data(), b.data(), 21, beta, linear_beta, a.data());  // out aliases a
    EXPECT_EQ(a, separate);
  });
}

TEST(OpsTest, SiluGluRoundsLikeTheFormula) {
  std::mt19937 rng(8);
  ForEachTarget([&] {
    size_t disagreements = 0;
    size_t total = 0;
    for (size_t n = 0; n <= kMaxLength + 100; ++n) {
      const size_t offset = (n + 3) % 4;
      std::vector<float> a = RandomBf16Values(rng, n + offset, -30.0f, 30.0f);
      std::vector<float> b = RandomBf16Values(rng, n + offset, -10.0f, 10.0f);
      if (n > 2) a[offset] = -150.0f, a[offset + 1] = 150.0f;
      std::vector<float> got(n + offset), ref(n + offset);
      SiluGlu(a.data() + offset, b.data() + offset, n, got.data() + offset);
      scalar::SiluGlu(a.data() + offset, b.data() + offset, n, ref.data() + offset);
      for (size_t i = 0; i < n; ++i) {
        const double va = a[offset + i];
        const std::vector<float> candidates = Bf16Candidates(va * SigmoidD(va) * b[offset + i]);
        ASSERT_TRUE(OneOf(got[offset + i], candidates)) << "a=" << va << " got=" << got[offset + i];
        ASSERT_TRUE(OneOf(ref[offset + i], candidates)) << "reference a=" << va;
        disagreements += got[offset + i] != ref[offset + i];
        ++total;
      }
    }
    EXPECT_LE(disagreements, total / 50) << "of " << total;
  });
}

// ---- dot, axpy, softmax ----------------------------------------------------------------------------

TEST(OpsTest, DotMatchesReference) {
  std::mt19937 rng(9);
  ForEachTarget([&] {
    for (size_t n = 0; n <= 4 * kMaxLanes + 70; ++n) {
      const size_t oa = n % 4, ob = (n / 4) % 4;
      std::vector<float> a = RandomFloats(rng, n + oa, -2.0f, 2.0f);
      std::vector<float> b = RandomFloats(rng, n + ob, -2.0f, 2.0f);
      double magnitude = 0;
      for (size_t i = 0; i < n; ++i) magnitude += std::abs(double{a[oa + i]} * b[ob + i]);
      const float got = Dot(a.data() + oa, b.data() + ob, n);
      const float ref = scalar::Dot(a.data() + oa, b.data() + ob, n);
      ASSERT_NEAR(got, ref, 1e-5 * magnitude) << "n=" << n;
    }
  });
}

TEST(OpsTest, AxpyMatchesReference) {
  std::mt19937 rng(10);
  ForEachTarget([&] {
    for (size_t n = 0; n <= kMaxLength; ++n) {
      const size_t ox = n % 4, oy = (n + 1) % 4;
      std::vector<float> x = RandomFloats(rng, n + ox, -2.0f, 2.0f);
      std::vector<float> y = RandomFloats(rng, n + oy, -2.0f, 2.0f);
      std::vector<float> ref = y;
      Axpy(0.37f, x.data() + ox, y.data() + oy, n);
      scalar::Axpy(0.37f, x.data() + ox, ref.data() + oy, n);
      for (size_t i = 0; i < oy; ++i) ASSERT_EQ(y[i], ref[i]);
      for (size_t i = 0; i < n; ++i) {
        const double scale = std::abs(ref[oy + i]) + std::abs(0.37 * x[ox + i]);
        ASSERT_NEAR(y[oy + i], ref[oy + i], 2e-7 * scale) << "n=" << n << " i=" << i;
      }
    }
  });
}

// ---- bf16 rows --------------------------------------------------------------------------------------

TEST(OpsTest, F32ToBf16MatchesFloatToBf16Exactly) {
  std::mt19937 rng(21);
  ForEachTarget([&] {
    for (size_t n = 0; n <= kMaxLength; ++n) {
      for (size_t offset = 0; offset <= 3; ++offset) {
        std::vector<float> x = RandomFloats(rng, n + offset, -1e4f, 1e4f);
        if (n > 0) x[offset] = std::numeric_limits<float>::quiet_NaN();
        std::vector<bf16> y(n + offset), ref(n + offset);
        for (size_t i = 0; i < offset; ++i) y[i].bits = ref[i].bits = 0x1234;
        F32ToBf16(x.data() + offset, n, y.data() + offset);
        scalar::F32ToBf16(x.data() + offset, n, ref.data() + offset);
        for (size_t i = 0; i < n + offset; ++i) ASSERT_EQ(y[i].bits, ref[i].bits) << "n=" << n << " i=" << i;
      }
    }
  });
}

// Bf16 values in, so the scores over a bf16 cache equal those over the same values held in fp32.
std::vector<bf16> RandomBf16(std::mt19937& rng, size_t n) {
  const std::vector<float> f = RandomFloats(rng, n, -2.0f, 2.0f);
  std::vector<bf16> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBf16(f[i]);
  return out;
}

TEST(OpsTest, DotBf16MatchesReference) {
  std::mt19937 rng(22);
  ForEachTarget([&] {
    for (size_t n = 0; n <= 4 * kMaxLanes + 70; ++n) {
      const size_t oa = n % 4, ob = (n / 4) % 4;
      std::vector<float> a = RandomFloats(rng, n + oa, -2.0f, 2.0f);
      std::vector<bf16> b = RandomBf16(rng, n + ob);
      std::vector<float> wide(n);
      for (size_t i = 0; i < n; ++i) wide[i] = Bf16ToFloat(b[ob + i]);
      double magnitude = 0;
      for (size_t i = 0; i < n; ++i) magnitude += std::abs(double{a[oa + i]} * wide[i]);
      const float got = DotBf16(a.data() + oa, b.data() + ob, n);
      ASSERT_NEAR(got, scalar::DotBf16(a.data() + oa, b.data() + ob, n), 1e-5 * magnitude) << "n=" << n;
      ASSERT_NEAR(got, Dot(a.data() + oa, wide.data(), n), 1e-5 * magnitude) << "n=" << n;
    }
  });
}

TEST(OpsTest, AxpyBf16MatchesReferenceAndEqualsAxpyOfWidened) {
  std::mt19937 rng(23);
  ForEachTarget([&] {
    for (size_t n = 0; n <= kMaxLength; ++n) {
      const size_t ox = n % 4, oy = (n + 1) % 4;
      std::vector<bf16> x = RandomBf16(rng, n + ox);
      std::vector<float> y = RandomFloats(rng, n + oy, -2.0f, 2.0f);
      std::vector<float> ref = y, same = y, wide(n);
      for (size_t i = 0; i < n; ++i) wide[i] = Bf16ToFloat(x[ox + i]);
      AxpyBf16(0.37f, x.data() + ox, y.data() + oy, n);
      scalar::AxpyBf16(0.37f, x.data() + ox, ref.data() + oy, n);
      Axpy(0.37f, wide.data(), same.data() + oy, n);
      for (size_t i = 0; i < oy; ++i) ASSERT_EQ(y[i], ref[i]);
      for (size_t i = 0; i < n; ++i) {
        const double scale = std::abs(ref[oy + i]) + std::abs(0.37 * wide[i]);
        ASSERT_NEAR(y[oy + i], ref[oy + i], 2e-7 * scale) << "n=" << n << " i=" << i;
        ASSERT_EQ(Bits(y[oy + i]), Bits(same[oy + i])) << "n=" << n << " i=" << i;
      }
    }
  });
}

TEST(OpsTest, SoftmaxMatchesReference) {
  std::mt19937 rng(11);
  ForEachTarget([&] {
    for (size_t n = 0; n <= kMaxLength + 40; ++n) {
      const size_t offset = n % 4;
      std::vector<float> x = RandomFloats(rng, n + offset, -30.0f, 30.0f);
      if (n > 2) x[offset + n / 2] = 80.0f;  // a dominant entry: others underflow towards 0
      std::vector<float> ref = x;
      Softmax(x.data() + offset, n);
      scalar::Softmax(ref.data() + offset, n);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(x[offset + i], ref[offset + i], 1e-5 * ref[offset + i] + 1e-37)
            << "n=" << n << " i=" << i;
        sum += x[offset + i];
      }
      if (n > 0) {
        ASSERT_NEAR(sum, 1.0, 1e-5);
      }
    }
  });
}

// ---- MXFP4 -----------------------------------------------------------------------------------------

TEST(Mxfp4Test, ScaleAndCodeTables) {
  EXPECT_EQ(E8M0ToFloat(127), 1.0f);
  EXPECT_EQ(E8M0ToFloat(121), 1.0f / 64);
  EXPECT_EQ(E8M0ToFloat(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(E8M0ToFloat(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isinf(E8M0ToFloat(255)));
  const float magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t code = 0; code < 16; ++code) {
    EXPECT_EQ(std::abs(E2M1ToFloat(code)), magnitudes[code & 7]);
    EXPECT_EQ(std::signbit(E2M1ToFloat(code)), (code & 8) != 0);
  }
}

// Every byte value, both nibbles, under several scales: K = 512 holds the 256 bytes once.
std::vector<uint8_t> AllBytes() {
  std::vector<uint8_t> packed(256);
  for (size_t i = 0; i < 256; ++i) packed[i] = static_cast<uint8_t>(i);
  return packed;
}

TEST(Mxfp4Test, DequantizesEveryByte) {
  const size_t K = 512;
  const std::vector<uint8_t> packed = AllBytes();
  std::vector<uint8_t> scales(K / 32);
  for (size_t g = 0; g < scales.size(); ++g)
    scales[g] = static_cast<uint8_t>(std::vector<int>{0, 1, 100, 127, 128, 200, 254, 255}[g % 8]);
  std::vector<float> row(K);
  DequantMxfp4Row(packed.data(), scales.data(), K, row.data());
  for (size_t c = 0; c < K; ++c) {
    const uint8_t byte = packed[c / 2];
    const uint8_t code = c % 2 == 0 ? byte & 0xF : byte >> 4;
    const float want = E2M1ToFloat(code) * std::ldexp(1.0f, scales[c / 32] - 127);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(row[c])) << c;  // 0 x 2^128 (scale 255) is NaN: no special casing
    } else {
      EXPECT_EQ(Bits(row[c]), Bits(want)) << c;
    }
  }
}

TEST(Mxfp4Test, MatMulWithOneHotInputsReproducesEveryByte) {
  const size_t K = 512, N = 3;
  std::vector<uint8_t> packed, scales;
  for (size_t n = 0; n < N; ++n) {
    const std::vector<uint8_t> bytes = AllBytes();
    // Rotate the bytes per row so rows differ; scales stay finite (255 would turn 0 x inf into NaN).
    for (size_t i = 0; i < 256; ++i) packed.push_back(bytes[(i + 37 * n) % 256]);
    for (size_t g = 0; g < K / 32; ++g)
      scales.push_back(static_cast<uint8_t>(std::vector<int>{0, 1, 100, 127, 128, 200, 250}[(g + n) % 7]));
  }
  std::vector<float> x(K * K, 0.0f);  // identity: row m is one-hot at m
  for (size_t m = 0; m < K; ++m) x[m * K + m] = 1.0f;
  ThreadPool pool(2);
  ForEachBf16Path([&] {
    ForEachTarget([&] {
      std::vector<float> y(K * N);
      MatMulMxfp4(x.data(), K, K, packed.data(), scales.data(), N, y.data(), &pool);
      std::vector<float> row(K);
      for (size_t n = 0; n < N; ++n) {
        DequantMxfp4Row(packed.data() + n * K / 2, scales.data() + n * K / 32, K, row.data());
        for (size_t k = 0; k < K; ++k) ASSERT_EQ(y[k * N + n], row[k]) << "n=" << n << " k=" << k;
      }
    });
  });
}

// Spec §3.3 golden: the first 16 values of row 0 of layers.1...experts.0.w1. With scale 2^-6
// (E8M0 121) they are the E2M1 values 4, .5, -.5, -1.5, -4, -2, 1.5, 1, 3, -0, -1.5, -1, -1.5, -.5, 1, -1,
// i.e. codes 6,1, 9,B, E,C, 3,2, 5,8, B,A, B,9, 2,A packed low nibble first.
// The MXFP4 kernels' x layout (matmul_dpbf16.h), the top half of each element's fp32 bits, the rest of
// the row zero. x86-64 (mxfp4_dpbf16.cc): element 16 j + 4 q + p of a 128-element block in word 4 j + p
// of the block's vector q, on the SIMD route (whole blocks, where the CPU runs the MXFP4 dot-product
// kernel) and in plain code (a partial last block, or everywhere else). arm64 (mxfp4_bfdot.cc): element
// e of a 32-element group in word (e / 2) % 8 of the group's vector 2 (e % 2) + (e / 2) / 8.
TEST(Mxfp4Test, InputLayoutPutsEachElementInItsSlot) {
  std::mt19937 rng(22);
  for (const size_t K : {32, 96, 128, 352, 1024}) {
    const size_t M = 3, stride = (K + 127) / 128 * 128 + 128;
    const std::vector<float> x = RandomFloats(rng, M * K, -3.0f, 3.0f);
    std::vector<uint16_t> got(M * stride, 0xdead);
    dpbf16::LayOutMxfp4Input(x.data(), M, K, got.data(), stride);
    std::vector<uint16_t> want(M * stride, 0);
    for (size_t m = 0; m < M; ++m) {
      for (size_t k = 0; k < K; ++k) {
#if defined(__aarch64__)
        const size_t e = k % 32, slot = k / 32 * 32 + 8 * (2 * (e % 2) + e / 16) + (e / 2) % 8;
#else
        const size_t e = k % 128, j = e / 16, q = (e % 16) / 4, p = e % 4;
        const size_t slot = k / 128 * 128 + 32 * q + 4 * j + p;
#endif
        uint32_t bits;
        std::memcpy(&bits, &x[m * K + k], sizeof(bits));
        want[m * stride + slot] = static_cast<uint16_t>(bits >> 16);
      }
    }
    ASSERT_EQ(got, want) << "K=" << K;
  }
}

TEST(Mxfp4Test, SpecGoldenRow) {
  const float golden[16] = {0.0625f,     0.0078125f,  -0.0078125f, -0.0234375f, -0.0625f,    -0.03125f,
                            0.0234375f,  0.015625f,   0.046875f,   -0.0f,       -0.0234375f, -0.015625f,
                            -0.0234375f, -0.0078125f, 0.015625f,   -0.015625f};
  // Elements 16..31 are zero.
  const std::vector<uint8_t> packed = {0x16, 0xB9, 0xCE, 0x23, 0x85, 0xAB, 0x9B, 0xA2,
                                       0,    0,    0,    0,    0,    0,    0,    0};
  const uint8_t scale = 121;
  std::vector<float> row(32);
  DequantMxfp4Row(packed.data(), &scale, 32, row.data());
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(row[i], golden[i]) << i;
    EXPECT_EQ(std::signbit(row[i]), std::signbit(golden[i])) << i;
  }
  ForEachTarget([&] {
    std::vector<float> x(16 * 32, 0.0f);
    for (size_t m = 0; m < 16; ++m) x[m * 32 + m] = 1.0f;
    std::vector<float> y(16);
    MatMulMxfp4(x.data(), 16, 32, packed.data(), &scale, 1, y.data(), nullptr);
    for (size_t m = 0; m < 16; ++m) EXPECT_EQ(y[m], golden[m]) << m;
  });
}

// ---- matmuls ---------------------------------------------------------------------------------------

struct Shape {
  size_t M, K, N;
};

// MXFP4 weights (packed [N, K/2], scales [N, K/32]) dequantised row by row: [N, K].
std::vector<float> DequantMxfp4Matrix(const uint8_t* packed, const uint8_t* scales, size_t N, size_t K) {
  std::vector<float> dequant(N * K);
  for (size_t n = 0; n < N; ++n) DequantMxfp4Row(packed + n * K / 2, scales + n * K / 32, K, &dequant[n * K]);
  return dequant;
}

// |got - ref| <= 1e-5 * sum_k |x_k * w_k| for every output; `wk(n, k)` is the dequantised weight.
template <class WeightAt>
void ExpectMatMulClose(const std::vector<float>& got, const std::vector<float>& ref, const float* x, size_t M,
                       size_t K, size_t N, const WeightAt& wk, const std::string& what) {
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      double magnitude = 0;
      for (size_t k = 0; k < K; ++k) magnitude += std::abs(double{x[m * K + k]} * wk(n, k));
      ASSERT_NEAR(got[m * N + n], ref[m * N + n], 1e-5 * magnitude + 1e-30)
          << what << " M=" << M << " K=" << K << " N=" << N << " m=" << m << " n=" << n;
    }
  }
}

std::vector<Shape> MatMulShapes(size_t k_multiple) {
  std::vector<Shape> shapes;
  const std::vector<size_t> ks = k_multiple == 1
                                     ? std::vector<size_t>{0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 67, 600}
                                     : std::vector<size_t>{32, 64, 96, 608};
  for (size_t K : ks) {
    for (Shape s : {Shape{1, 0, 1}, Shape{1, 0, 5}, Shape{2, 0, 4}, Shape{3, 0, 9}, Shape{5, 0, 7},
                    Shape{16, 0, 6}, Shape{17, 0, 6}, Shape{70, 0, 5}}) {
      s.K = K;
      shapes.push_back(s);
    }
  }
  shapes.push_back(Shape{1, 7 * k_multiple * (k_multiple == 1 ? 5 : 1), 130});  // many pool tasks
  shapes.push_back(Shape{4, 32 * 3, 261});
  return shapes;
}

// Runs `run(x, M, y, pool)` with pool = nullptr, 2 and 3 threads; every result must equal the
// single-threaded one bit for bit, and each row of a batch must equal that row computed alone.
void CheckThreadAndBatchInvariance(size_t M, size_t K, size_t N, const float* x,
                                   const std::function<void(const float*, size_t, float*, ThreadPool*)>& run,
                                   const std::vector<float>& single) {
  ThreadPool pool2(2), pool3(3);
  for (ThreadPool* pool : {&pool2, &pool3}) {
    std::vector<float> y(M * N);
    run(x, M, y.data(), pool);
    ASSERT_EQ(y, single) << "threads=" << pool->num_threads() << " M=" << M << " K=" << K << " N=" << N;
  }
  for (size_t m : {size_t{0}, M - 1}) {
    std::vector<float> row(N);
    run(x + m * K, 1, row.data(), nullptr);
    ASSERT_TRUE(std::equal(row.begin(), row.end(), single.begin() + m * N)) << "row " << m << " of M=" << M;
  }
}

TEST(MatMulTest, Bf16MatchesReference) {
  std::mt19937 rng(12);
  ForEachBf16Path([&] {
    ForEachTarget([&] {
      for (const Shape& s : MatMulShapes(1)) {
        const size_t ox = s.K % 4, ow = (s.K + 1) % 4, oy = s.N % 4;
        std::vector<float> x = RandomBf16Values(rng, s.M * s.K + ox, -2.0f, 2.0f);
        std::vector<bf16> w = RandomBf16(rng, s.N * s.K + ow, -1.0f, 1.0f);
        std::vector<float> y(s.M * s.N + oy, 99.0f), ref(s.M * s.N);
        MatMulBf16(x.data() + ox, s.M, s.K, w.data() + ow, s.N, y.data() + oy, nullptr);
        scalar::MatMulBf16(x.data() + ox, s.M, s.K, w.data() + ow, s.N, ref.data());
        for (size_t i = 0; i < oy; ++i) ASSERT_EQ(y[i], 99.0f);
        std::vector<float> got(y.begin() + oy, y.end());
        ExpectMatMulClose(
            got, ref, x.data() + ox, s.M, s.K, s.N,
            [&](size_t n, size_t k) { return Bf16ToFloat(w[ow + n * s.K + k]); }, "bf16");
        CheckThreadAndBatchInvariance(
            s.M, s.K, s.N, x.data() + ox,
            [&](const float* xx, size_t M, float* yy, ThreadPool* pool) {
              MatMulBf16(xx, M, s.K, w.data() + ow, s.N, yy, pool);
            },
            got);
      }
    });
  });
}

TEST(MatMulTest, F32MatchesReference) {
  std::mt19937 rng(13);
  ForEachTarget([&] {
    for (const Shape& s : MatMulShapes(1)) {
      const size_t ox = (s.K + 2) % 4, ow = (s.K + 3) % 4;
      std::vector<float> x = RandomFloats(rng, s.M * s.K + ox, -2.0f, 2.0f);
      std::vector<float> w = RandomFloats(rng, s.N * s.K + ow, -1.0f, 1.0f);
      std::vector<float> got(s.M * s.N), ref(s.M * s.N);
      MatMulF32(x.data() + ox, s.M, s.K, w.data() + ow, s.N, got.data(), nullptr);
      scalar::MatMulF32(x.data() + ox, s.M, s.K, w.data() + ow, s.N, ref.data());
      ExpectMatMulClose(
          got, ref, x.data() + ox, s.M, s.K, s.N, [&](size_t n, size_t k) { return w[ow + n * s.K + k]; },
          "f32");
      CheckThreadAndBatchInvariance(
          s.M, s.K, s.N, x.data() + ox,
          [&](const float* xx, size_t M, float* yy, ThreadPool* pool) {
            MatMulF32(xx, M, s.K, w.data() + ow, s.N, yy, pool);
          },
          got);
    }
  });
}

TEST(MatMulTest, Mxfp4MatchesReference) {
  std::mt19937 rng(14);
  ForEachBf16Path([&] {
    ForEachTarget([&] {
      for (const Shape& s : MatMulShapes(32)) {
        const size_t ox = (s.N + 1) % 4, op = s.N % 4, os = (s.N + 2) % 4;
        std::vector<float> x = RandomBf16Values(rng, s.M * s.K + ox, -2.0f, 2.0f);
        std::vector<uint8_t> packed(s.N * s.K / 2 + op), scales(s.N * s.K / 32 + os);
        for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
        for (uint8_t& b : scales) b = static_cast<uint8_t>(118 + rng() % 12);
        std::vector<float> got(s.M * s.N), ref(s.M * s.N);
        const uint8_t* p = packed.data() + op;
        const uint8_t* sc = scales.data() + os;
        MatMulMxfp4(x.data() + ox, s.M, s.K, p, sc, s.N, got.data(), nullptr);
        scalar::MatMulMxfp4(x.data() + ox, s.M, s.K, p, sc, s.N, ref.data());
        const std::vector<float> dequant = DequantMxfp4Matrix(p, sc, s.N, s.K);
        ExpectMatMulClose(
            got, ref, x.data() + ox, s.M, s.K, s.N, [&](size_t n, size_t k) { return dequant[n * s.K + k]; },
            "mxfp4");
        CheckThreadAndBatchInvariance(
            s.M, s.K, s.N, x.data() + ox,
            [&](const float* xx, size_t M, float* yy, ThreadPool* pool) {
              MatMulMxfp4(xx, M, s.K, p, sc, s.N, yy, pool);
            },
            got);
      }
    });
  });
}

// Decode-sized MXFP4 products (M <= 4) with rows long enough for the kernel's four-block scale loads and
// a partial last block (K = 2080), and enough rows that its prefetches reach rows ahead of the tile (and
// stop at the range's end when the pool splits N).
TEST(MatMulTest, Mxfp4DecodeShapesMatchReference) {
  std::mt19937 rng(19);
  ForEachBf16Path([&] {
    ForEachTarget([&] {
      for (const Shape& s : {Shape{1, 2080, 37}, Shape{4, 2080, 37}, Shape{2, 1024, 70}, Shape{3, 4096, 9}}) {
        std::vector<float> x = RandomBf16Values(rng, s.M * s.K, -2.0f, 2.0f);
        std::vector<uint8_t> packed(s.N * s.K / 2), scales(s.N * s.K / 32);
        for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
        for (uint8_t& b : scales) b = static_cast<uint8_t>(118 + rng() % 12);
        std::vector<float> got(s.M * s.N), ref(s.M * s.N);
        MatMulMxfp4(x.data(), s.M, s.K, packed.data(), scales.data(), s.N, got.data(), nullptr);
        scalar::MatMulMxfp4(x.data(), s.M, s.K, packed.data(), scales.data(), s.N, ref.data());
        const std::vector<float> dequant = DequantMxfp4Matrix(packed.data(), scales.data(), s.N, s.K);
        ExpectMatMulClose(
            got, ref, x.data(), s.M, s.K, s.N, [&](size_t n, size_t k) { return dequant[n * s.K + k]; },
            "mxfp4 decode");
        CheckThreadAndBatchInvariance(
            s.M, s.K, s.N, x.data(),
            [&](const float* xx, size_t M, float* yy, ThreadPool* pool) {
              MatMulMxfp4(xx, M, s.K, packed.data(), scales.data(), s.N, yy, pool);
            },
            got);
      }
    });
  });
}

// x over many binades inside a group (subnormals up to 2^100) and an all-zero group: within
// ExpectMatMulClose's bound on every target, each row alone equal to the row in the batch; a row holding an
// inf or a NaN gives non-finite outputs. No row is bf16-valued, so all take the fp32 path.
TEST(MatMulTest, Mxfp4WideRangeAndNonFiniteInputs) {
  std::mt19937 rng(23);
  const size_t M = 5, K = 128, N = 11;
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-140, 100);
  std::vector<float> x(M * K);
  for (float& v : x) v = std::ldexp(mantissa(rng), exponent(rng)) * (rng() % 2 ? -1.0f : 1.0f);
  std::fill(x.begin() + 1 * K + 32, x.begin() + 1 * K + 64, 0.0f);  // row 1, group 1: zeros
  for (size_t k = 0; k < 32; ++k) x[2 * K + k] = std::ldexp(mantissa(rng), -140 + static_cast<int>(k % 5));
  x[0 * K + 5] = std::numeric_limits<float>::quiet_NaN();
  x[4 * K + 40] = -std::numeric_limits<float>::infinity();
  std::vector<uint8_t> packed(N * K / 2), scales(N * K / 32);
  for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
  for (uint8_t& b : scales) b = static_cast<uint8_t>(118 + rng() % 12);
  const std::vector<float> dequant = DequantMxfp4Matrix(packed.data(), scales.data(), N, K);
  ForEachTarget([&] {
    std::vector<float> got(M * N), ref(M * N);
    MatMulMxfp4(x.data(), M, K, packed.data(), scales.data(), N, got.data(), nullptr);
    scalar::MatMulMxfp4(x.data(), M, K, packed.data(), scales.data(), N, ref.data());
    for (size_t m : {size_t{0}, size_t{4}}) {
      for (size_t n = 0; n < N; ++n) EXPECT_FALSE(std::isfinite(got[m * N + n])) << "m=" << m << " n=" << n;
    }
    const size_t finite_rows = 3;  // rows 1..3
    const std::vector<float> got_finite(got.begin() + N, got.begin() + (1 + finite_rows) * N);
    const std::vector<float> ref_finite(ref.begin() + N, ref.begin() + (1 + finite_rows) * N);
    ExpectMatMulClose(
        got_finite, ref_finite, x.data() + K, finite_rows, K, N,
        [&](size_t n, size_t k) { return dequant[n * K + k]; }, "wide range");
    for (size_t m = 1; m <= finite_rows; ++m) {
      std::vector<float> row(N);
      MatMulMxfp4(x.data() + m * K, 1, K, packed.data(), scales.data(), N, row.data(), nullptr);
      EXPECT_EQ(std::memcmp(row.data(), got.data() + m * N, N * sizeof(float)), 0) << "row " << m;
    }
  });
}

TEST(MatMulTest, EmptyShapes) {
  ForEachTarget([&] {
    std::vector<float> x(8, 1.0f), y(8, 5.0f);
    std::vector<bf16> w(8, FloatToBf16(1.0f));
    MatMulBf16(x.data(), 0, 4, w.data(), 2, y.data(), nullptr);  // M = 0: nothing written
    MatMulBf16(x.data(), 2, 4, w.data(), 0, y.data(), nullptr);  // N = 0: nothing written
    EXPECT_EQ(y, std::vector<float>(8, 5.0f));
    MatMulBf16(x.data(), 2, 0, w.data(), 3, y.data(), nullptr);  // K = 0: zeros
    EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 6), std::vector<float>(6, 0.0f));
    EXPECT_EQ(y[6], 5.0f);
  });
}

TEST(MatMulTest, XRowsPerBlockFitsTheBlockBudget) {
  EXPECT_EQ(XRowsPerBlock(3, 4096), 3u);                 // fewer rows than a block: all of them
  EXPECT_EQ(XRowsPerBlock(1000, 4096), kMaxXBlockRows);  // short rows: the cap
  EXPECT_EQ(XRowsPerBlock(1000, 14336), 36u);            // bf16 x at K = 7168: 512 KiB / 14 KiB
  EXPECT_EQ(XRowsPerBlock(1000, kXBlockBytes), 4u);      // never fewer than a tile
  EXPECT_EQ(XRowsPerBlock(1000, 0), kMaxXBlockRows);     // K = 0
  for (size_t bytes = 1; bytes < (size_t{1} << 22); bytes = bytes * 3 + 1) {
    const size_t rows = XRowsPerBlock(100000, bytes);
    EXPECT_EQ(rows % 4, 0u) << bytes;
    EXPECT_TRUE(rows == 4 || rows * bytes <= kXBlockBytes) << bytes;
  }
}

TEST(MatMulTest, PrefetchDistanceIsWholeTilesOfAtLeastTheMinimum) {
  EXPECT_EQ(PrefetchDistanceRows(4, 4096), 4u);  // bf16 at K = 2048: one tile of 16 KiB
  EXPECT_EQ(PrefetchDistanceRows(4, 512), 8u);   // an MXFP4 row at K = 1024: two tiles for 4 KiB
  EXPECT_EQ(PrefetchDistanceRows(4, 100), 44u);  // 11 tiles of 400 bytes
  EXPECT_EQ(PrefetchDistanceRows(4, 0), 4u * kPrefetchBytesAhead);  // K = 0: no division by zero
  for (size_t bytes = 1; bytes < (size_t{1} << 16); bytes = bytes * 3 + 1) {
    const size_t rows = PrefetchDistanceRows(4, bytes);
    EXPECT_EQ(rows % 4, 0u) << bytes;
    EXPECT_GE(rows * bytes, kPrefetchBytesAhead) << bytes;
    EXPECT_LT((rows - 4) * bytes, kPrefetchBytesAhead) << bytes;  // no more tiles than it takes
  }
}

TEST(MatMulTest, PrefetchRowStaysInsideTheCallsRange) {
  EXPECT_EQ(PrefetchRow(8, 8, 1, 100, 9), 17u);  // the row a distance ahead
  EXPECT_EQ(PrefetchRow(8, 8, 0, 16, 8), 8u);    // at n_end: the tile's own row
  EXPECT_EQ(PrefetchRow(8, 8, 3, 18, 11), 11u);  // past n_end: the tile's own row
  EXPECT_EQ(PrefetchRow(0, 4, 3, 8, 3), 7u);     // the last row of the range
}

// Rows of x long enough that a block holds fewer rows than the cap (several blocks of x rows, the last
// one short), on every bf16 path: each row equals that row computed alone, bit for bit.
TEST(MatMulTest, LongRowsInSeveralBlocksEqualEachRowAlone) {
  std::mt19937 rng(21);
  ForEachTarget([&] {
    ForEachBf16Path([&] {
      const size_t M = 42, K = 8192 + 32, N = 7;
      const std::vector<float> x = RandomBf16Values(rng, M * K, -2.0f, 2.0f);
      const std::vector<bf16> w = RandomBf16(rng, N * K, -1.0f, 1.0f);
      std::vector<uint8_t> packed(N * K / 2), scales(N * K / 32);
      for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
      for (uint8_t& b : scales) b = static_cast<uint8_t>(118 + rng() % 12);
      std::vector<float> bf16_y(M * N), mxfp4_y(M * N), row(N);
      MatMulBf16(x.data(), M, K, w.data(), N, bf16_y.data(), nullptr);
      MatMulMxfp4(x.data(), M, K, packed.data(), scales.data(), N, mxfp4_y.data(), nullptr);
      for (size_t m = 0; m < M; ++m) {
        MatMulBf16(x.data() + m * K, 1, K, w.data(), N, row.data(), nullptr);
        ASSERT_TRUE(std::equal(row.begin(), row.end(), bf16_y.begin() + m * N)) << "bf16 row " << m;
        MatMulMxfp4(x.data() + m * K, 1, K, packed.data(), scales.data(), N, row.data(), nullptr);
        ASSERT_TRUE(std::equal(row.begin(), row.end(), mxfp4_y.begin() + m * N)) << "mxfp4 row " << m;
      }
    });
  });
}

// A group of mixed jobs (two sharing one x, MXFP4 beside bf16, an f32 job of more rows than decode, empty
// jobs) gives each job's y bit for bit as its single call, with and without a pool.
TEST(MatMulTest, GroupEqualsSingleCalls) {
  std::mt19937 rng(15);
  ForEachBf16Path([&] {
    ForEachTarget([&] {
      const std::vector<float> x1 = RandomBf16Values(rng, 3 * 67, -2.0f, 2.0f);
      const std::vector<float> x2 = RandomBf16Values(rng, 2 * 64, -2.0f, 2.0f);
      const std::vector<float> x3 = RandomFloats(rng, 17 * 33, -2.0f, 2.0f);
      const std::vector<bf16> wa = RandomBf16(rng, 9 * 67, -1.0f, 1.0f);
      const std::vector<bf16> wb = RandomBf16(rng, 130 * 67, -1.0f, 1.0f);
      const std::vector<float> wd = RandomFloats(rng, 6 * 33, -1.0f, 1.0f);
      std::vector<uint8_t> packed(70 * 32), scales(70 * 2);
      for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
      for (uint8_t& b : scales) b = static_cast<uint8_t>(118 + rng() % 12);
      struct Out {
        std::vector<float> single, grouped;
      };
      std::vector<Out> outs(6);
      const size_t sizes[6] = {3 * 9, 3 * 130, 2 * 70, 17 * 6, 0, 0};
      for (size_t i = 0; i < 6; ++i) outs[i].single.assign(sizes[i], 0.0f);
      MatMulBf16(x1.data(), 3, 67, wa.data(), 9, outs[0].single.data(), nullptr);
      MatMulBf16(x1.data(), 3, 67, wb.data(), 130, outs[1].single.data(), nullptr);
      MatMulMxfp4(x2.data(), 2, 64, packed.data(), scales.data(), 70, outs[2].single.data(), nullptr);
      MatMulF32(x3.data(), 17, 33, wd.data(), 6, outs[3].single.data(), nullptr);
      ThreadPool pool2(2), pool3(3);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
        for (Out& out : outs) out.grouped.assign(out.single.size() + 1, 77.0f);  // + 1: nothing past y
        const MatMulJob jobs[] = {
            MatMulJob::Bf16(x1.data(), 3, 67, wa.data(), 9, outs[0].grouped.data()),
            MatMulJob::Bf16(x1.data(), 3, 67, wb.data(), 130, outs[1].grouped.data()),
            MatMulJob::Mxfp4(x2.data(), 2, 64, packed.data(), scales.data(), 70, outs[2].grouped.data()),
            MatMulJob::F32(x3.data(), 17, 33, wd.data(), 6, outs[3].grouped.data()),
            MatMulJob::Bf16(x1.data(), 0, 67, wa.data(), 9, outs[4].grouped.data()),  // M = 0
            MatMulJob::Bf16(x1.data(), 3, 67, wa.data(), 0, outs[5].grouped.data()),  // N = 0
        };
        MatMulGroup(jobs, 6, pool);
        for (size_t i = 0; i < 6; ++i) {
          const std::vector<float>& got = outs[i].grouped;
          ASSERT_TRUE(std::equal(outs[i].single.begin(), outs[i].single.end(), got.begin()))
              << "job " << i << " threads=" << (pool ? pool->num_threads() : 1);
          ASSERT_EQ(got.back(), 77.0f) << "job " << i << " wrote past its y";
        }
      }
    });
  });
}

// A decode-shaped group (matmul_overlap.h): MXFP4 jobs of one and two x rows whose tasks prefetch the
// weights of the bf16 jobs' tasks, several tasks each, beside jobs that take no part (three x rows, fp32).
// The overlap changes the run order and adds prefetches only: every output is bit-identical to the group
// run in job order, on every target and bf16 path, with 1 to 3 threads.
TEST(MatMulTest, OverlapLeavesResultsBitIdentical) {
  std::mt19937 rng(16);
  struct Shape {
    WeightKind kind;
    size_t M, K, N;
  };
  // Decode tasks cover up to 256 weight rows of at least 256 KiB (RowsPerTask): N = 600 gives 3 tasks.
  const Shape shapes[] = {{WeightKind::kMxfp4, 1, 1024, 600}, {WeightKind::kMxfp4, 2, 1024, 520},
                          {WeightKind::kMxfp4, 1, 512, 300},  {WeightKind::kBf16, 1, 1024, 700},
                          {WeightKind::kBf16, 2, 512, 300},   {WeightKind::kBf16, 1, 96, 40},
                          {WeightKind::kBf16, 3, 512, 90},    {WeightKind::kF32, 1, 64, 33}};
  constexpr size_t kJobs = sizeof(shapes) / sizeof(shapes[0]);
  std::vector<std::vector<float>> xs(kJobs), f32_weights(kJobs);
  std::vector<std::vector<bf16>> bf16_weights(kJobs);
  std::vector<std::vector<uint8_t>> packed(kJobs), scales(kJobs);
  for (size_t j = 0; j < kJobs; ++j) {
    const Shape& s = shapes[j];
    xs[j] = RandomBf16Values(rng, s.M * s.K, -2.0f, 2.0f);
    if (s.kind == WeightKind::kBf16) bf16_weights[j] = RandomBf16(rng, s.N * s.K, -1.0f, 1.0f);
    if (s.kind == WeightKind::kF32) f32_weights[j] = RandomFloats(rng, s.N * s.K, -1.0f, 1.0f);
    if (s.kind == WeightKind::kMxfp4) {
      packed[j].resize(s.N * s.K / 2);
      scales[j].resize(s.N * s.K / 32);
      for (uint8_t& b : packed[j]) b = static_cast<uint8_t>(rng());
      for (uint8_t& b : scales[j]) b = static_cast<uint8_t>(118 + rng() % 12);
    }
  }
  auto run = [&](bool overlap, ThreadPool* pool) {
    std::vector<std::vector<float>> ys(kJobs);
    std::vector<MatMulJob> jobs;
    for (size_t j = 0; j < kJobs; ++j) {
      const Shape& s = shapes[j];
      ys[j].assign(s.M * s.N + 1, 77.0f);  // + 1: nothing past y
      if (s.kind == WeightKind::kBf16) {
        jobs.push_back(MatMulJob::Bf16(xs[j].data(), s.M, s.K, bf16_weights[j].data(), s.N, ys[j].data()));
      } else if (s.kind == WeightKind::kF32) {
        jobs.push_back(MatMulJob::F32(xs[j].data(), s.M, s.K, f32_weights[j].data(), s.N, ys[j].data()));
      } else {
        jobs.push_back(
            MatMulJob::Mxfp4(xs[j].data(), s.M, s.K, packed[j].data(), scales[j].data(), s.N, ys[j].data()));
      }
    }
    SetMatMulOverlap(overlap);
    MatMulGroup(jobs.data(), jobs.size(), pool);
    SetMatMulOverlap(true);
    return ys;
  };
  ForEachBf16Path([&] {
    ForEachTarget([&] {
      const std::vector<std::vector<float>> in_job_order = run(false, nullptr);
      for (size_t j = 0; j < kJobs; ++j) ASSERT_EQ(in_job_order[j].back(), 77.0f) << "job " << j;
      ThreadPool pool2(2), pool3(3);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
        const std::vector<std::vector<float>> overlapped = run(true, pool);
        for (size_t j = 0; j < kJobs; ++j) {
          ASSERT_EQ(overlapped[j], in_job_order[j])
              << "job " << j << " threads=" << (pool ? pool->num_threads() : 1);
        }
      }
    });
  });
}

// A batch whose rows are partly bf16 values and partly not (rows 1 and 4 carry fp32 noise): with the
// dot-product path active the job runs both paths; each row must still equal that row computed alone,
// with and without a pool, and the reference.
TEST(MatMulTest, Bf16MixedRowsEqualEachRowAlone) {
  std::mt19937 rng(16);
  ForEachBf16Path([&] {
    for (const Shape& s : {Shape{6, 67, 9}, Shape{6, 608, 130}, Shape{40, 96, 21}}) {
      std::vector<float> x = RandomBf16Values(rng, s.M * s.K, -2.0f, 2.0f);
      const std::vector<float> noise = RandomFloats(rng, 2 * s.K, -2.0f, 2.0f);
      std::copy(noise.begin(), noise.begin() + s.K, x.begin() + 1 * s.K);
      std::copy(noise.begin() + s.K, noise.end(), x.begin() + 4 * s.K);
      const std::vector<bf16> w = RandomBf16(rng, s.N * s.K, -1.0f, 1.0f);
      std::vector<float> got(s.M * s.N, 5.0f), ref(s.M * s.N);
      MatMulBf16(x.data(), s.M, s.K, w.data(), s.N, got.data(), nullptr);
      scalar::MatMulBf16(x.data(), s.M, s.K, w.data(), s.N, ref.data());
      ExpectMatMulClose(
          got, ref, x.data(), s.M, s.K, s.N, [&](size_t n, size_t k) { return Bf16ToFloat(w[n * s.K + k]); },
          "mixed bf16");
      ThreadPool pool2(2);
      std::vector<float> pooled(s.M * s.N);
      MatMulBf16(x.data(), s.M, s.K, w.data(), s.N, pooled.data(), &pool2);
      ASSERT_EQ(pooled, got) << "M=" << s.M;
      for (size_t m = 0; m < s.M; ++m) {
        std::vector<float> row(s.N);
        MatMulBf16(x.data() + m * s.K, 1, s.K, w.data(), s.N, row.data(), nullptr);
        ASSERT_TRUE(std::equal(row.begin(), row.end(), got.begin() + m * s.N)) << "row " << m << " M=" << s.M;
      }
    }
  });
}

// The same for MXFP4 weights (K a multiple of 32 but not of 128, and of 128).
TEST(MatMulTest, Mxfp4MixedRowsEqualEachRowAlone) {
  std::mt19937 rng(17);
  ForEachBf16Path([&] {
    for (const Shape& s : {Shape{6, 96, 9}, Shape{6, 608, 130}, Shape{40, 1024, 21}}) {
      std::vector<float> x = RandomBf16Values(rng, s.M * s.K, -2.0f, 2.0f);
      const std::vector<float> noise = RandomFloats(rng, 2 * s.K, -2.0f, 2.0f);
      std::copy(noise.begin(), noise.begin() + s.K, x.begin() + 1 * s.K);
      std::copy(noise.begin() + s.K, noise.end(), x.begin() + 4 * s.K);
      std::vector<uint8_t> packed(s.N * s.K / 2), scales(s.N * s.K / 32);
      for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
      for (uint8_t& b : scales) b = static_cast<uint8_t>(118 + rng() % 12);
      std::vector<float> got(s.M * s.N, 5.0f), ref(s.M * s.N);
      MatMulMxfp4(x.data(), s.M, s.K, packed.data(), scales.data(), s.N, got.data(), nullptr);
      scalar::MatMulMxfp4(x.data(), s.M, s.K, packed.data(), scales.data(), s.N, ref.data());
      const std::vector<float> dequant = DequantMxfp4Matrix(packed.data(), scales.data(), s.N, s.K);
      ExpectMatMulClose(
          got, ref, x.data(), s.M, s.K, s.N, [&](size_t n, size_t k) { return dequant[n * s.K + k]; },
          "mixed mxfp4");
      ThreadPool pool2(2);
      std::vector<float> pooled(s.M * s.N);
      MatMulMxfp4(x.data(), s.M, s.K, packed.data(), scales.data(), s.N, pooled.data(), &pool2);
      ASSERT_EQ(pooled, got) << "M=" << s.M;
      for (size_t m = 0; m < s.M; ++m) {
        std::vector<float> row(s.N);
        MatMulMxfp4(x.data() + m * s.K, 1, s.K, packed.data(), scales.data(), s.N, row.data(), nullptr);
        ASSERT_TRUE(std::equal(row.begin(), row.end(), got.begin() + m * s.N)) << "row " << m << " M=" << s.M;
      }
    }
  });
}

// Inputs large enough that MatMulGroup lays x out in pieces on the pool (prefill-sized: more than
// 2 x 32K values), with rows of both paths (row 1 carries fp32 noise) and two jobs sharing one x per kind:
// every y equals the one computed without a pool, bit for bit, on every target.
TEST(MatMulTest, InputsLaidOutOnThePoolEqualInline) {
  std::mt19937 rng(18);
  ForEachBf16Path([&] {
    ForEachTarget([&] {
      const size_t M = 80, K = 1024, N = 24;
      std::vector<float> x = RandomBf16Values(rng, M * K, -2.0f, 2.0f);
      const std::vector<float> noise = RandomFloats(rng, K, -2.0f, 2.0f);
      std::copy(noise.begin(), noise.end(), x.begin() + K);
      const std::vector<bf16> wb = RandomBf16(rng, 2 * N * K, -1.0f, 1.0f);
      const std::vector<float> wf = RandomFloats(rng, N * K, -1.0f, 1.0f);
      std::vector<uint8_t> packed(2 * N * K / 2), scales(2 * N * K / 32);
      for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
      for (uint8_t& b : scales) b = static_cast<uint8_t>(118 + rng() % 12);
      auto run = [&](ThreadPool* pool) {
        std::vector<std::vector<float>> y(5, std::vector<float>(M * N));
        const MatMulJob jobs[] = {
            MatMulJob::Bf16(x.data(), M, K, wb.data(), N, y[0].data()),
            MatMulJob::Bf16(x.data(), M, K, wb.data() + N * K, N, y[1].data()),
            MatMulJob::F32(x.data(), M, K, wf.data(), N, y[2].data()),
            MatMulJob::Mxfp4(x.data(), M, K, packed.data(), scales.data(), N, y[3].data()),
            MatMulJob::Mxfp4(x.data(), M, K, packed.data() + N * K / 2, scales.data() + N * K / 32, N,
                             y[4].data()),
        };
        MatMulGroup(jobs, 5, pool);
        return y;
      };
      const auto inline_y = run(nullptr);
      ThreadPool pool2(2), pool3(3);
      for (ThreadPool* pool : {&pool2, &pool3}) {
        const auto pooled = run(pool);
        for (size_t j = 0; j < pooled.size(); ++j)
          ASSERT_EQ(pooled[j], inline_y[j]) << "job " << j << " threads=" << pool->num_threads();
      }
      // And the single calls agree with the group (the first bf16 and MXFP4 jobs).
      std::vector<float> single(M * N);
      MatMulBf16(x.data(), M, K, wb.data(), N, single.data(), &pool2);
      ASSERT_EQ(single, inline_y[0]);
      MatMulMxfp4(x.data(), M, K, packed.data(), scales.data(), N, single.data(), &pool2);
      ASSERT_EQ(single, inline_y[3]);
    });
  });
}

// ---- KDA kernels -------------------------------------------------------------------------------------

double RelativeDifference(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    norm += double{want[i]} * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// The SIMD recurrence against the scalar reference on every target (outputs and state to fp32 noise), at
// V with and without a remainder past whole vectors and at K3 size; and n tokens at once equal to n single
// tokens bit for bit (prefill and decode give the same state).
TEST(KdaTest, RecurrenceMatchesScalarReference) {
  std::mt19937 rng(31);
  ForEachTarget([&] {
    for (const Shape& shape : {Shape{9, 32, 24}, Shape{5, 128, 128}, Shape{3, 7, 37}}) {
      const size_t n = shape.M, K = shape.K, V = shape.N;
      SCOPED_TRACE(testing::Message() << "n=" << n << " K=" << K << " V=" << V);
      std::vector<float> q = RandomFloats(rng, n * K, -0.3f, 0.3f), k = RandomFloats(rng, n * K, -0.3f, 0.3f);
      const std::vector<float> v = RandomFloats(rng, n * V, -2.0f, 2.0f),
                               g = RandomFloats(rng, n * K, -5.0f, 0.0f);
      const std::vector<float> beta = RandomFloats(rng, n, 0.0f, 1.0f),
                               state = RandomFloats(rng, K * V, -1.0f, 1.0f);
      std::vector<float> s_simd = state, s_ref = state, o_simd(n * V), o_ref(n * V);
      KdaRecurrent(q.data(), k.data(), v.data(), g.data(), beta.data(), n, K, V, s_simd.data(),
                   o_simd.data());
      scalar::KdaRecurrent(q.data(), k.data(), v.data(), g.data(), beta.data(), n, K, V, s_ref.data(),
                           o_ref.data());
      EXPECT_LE(RelativeDifference(o_simd, o_ref), 1e-5);
      EXPECT_LE(RelativeDifference(s_simd, s_ref), 1e-5);
      std::vector<float> s_steps = state, o_steps(n * V);
      for (size_t t = 0; t < n; ++t) {
        KdaRecurrent(q.data() + t * K, k.data() + t * K, v.data() + t * V, g.data() + t * K, beta.data() + t,
                     1, K, V, s_steps.data(), o_steps.data() + t * V);
      }
      EXPECT_EQ(o_steps, o_simd);
      EXPECT_EQ(s_steps, s_simd);
    }
  });
}

// The SIMD short conv against the scalar reference on every target: outputs within one bf16 step (the
// sum is fused and exp is hwy's before the rounding), tails exact; and a channel's result does not depend
// on the task's channel range or on how the rows are cut into calls (bit for bit).
TEST(KdaTest, ConvMatchesScalarReference) {
  std::mt19937 rng(32);
  ForEachTarget([&] {
    const size_t W = 4, P = 37, rows = 9;
    const std::vector<float> raw = RandomBf16Values(rng, rows * P, -2.0f, 2.0f);
    const std::vector<float> taps = RandomFloats(rng, P * W, -1.0f, 1.0f);
    const std::vector<float> tail0 = RandomBf16Values(rng, (W - 1) * P, -2.0f, 2.0f);
    std::vector<float> scratch(W * P), new_tail(W);
    std::vector<float> out(rows * P), tail = tail0, ref(rows * P), ref_tail = tail0;
    CausalConvSilu(raw.data(), taps.data(), W, P, rows, 0, P, tail.data(), scratch.data(), out.data());
    scalar::CausalConvSilu(raw.data(), taps.data(), W, P, rows, 0, P, ref_tail.data(), new_tail.data(),
                           ref.data());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], std::abs(ref[i]) / 128.0f) << i;
    EXPECT_EQ(tail, ref_tail);
    // Channels in two ranges, rows in two calls (2 then 7, so the second call reads the carried tail).
    std::vector<float> pieces(rows * P), piece_tail = tail0;
    for (const auto& [c0, c1] : {std::pair<size_t, size_t>{0, 13}, std::pair<size_t, size_t>{13, P}}) {
      CausalConvSilu(raw.data(), taps.data(), W, P, 2, c0, c1, piece_tail.data(), scratch.data(),
                     pieces.data());
      CausalConvSilu(raw.data() + 2 * P, taps.data(), W, P, rows - 2, c0, c1, piece_tail.data(),
                     scratch.data(), pieces.data() + 2 * P);
    }
    EXPECT_EQ(pieces, out);
    EXPECT_EQ(piece_tail, tail);
  });
}

// The scores of latent attention, on every target: each (query, row) pair's score is DotBf16 of the pair
// times the scale, bit for bit, over bf16 rows and over fp32 rows holding the same values, whatever the
// number of queries (tiles of 4 and a partial one), of rows (tiles of 3 or 4 and a partial one; several key
// blocks of 256) and the width (under one vector, whole vectors, a remainder).
TEST(AttentionTest, LatentScoresArePairDotsInEveryTile) {
  ForEachTarget([] {
    for (const size_t width : {1, 7, 8, 37, 64, 164, 320, 576}) {
      for (const size_t visible : {1, 2, 3, 4, 5, 7, 33, 601}) {
        std::mt19937 rng(static_cast<uint32_t>(width * 1000 + visible));
        std::vector<bf16> stored = RandomBf16(rng, visible * width);
        std::vector<float> wide(visible * width);
        for (size_t i = 0; i < wide.size(); ++i) wide[i] = Bf16ToFloat(stored[i]);
        std::vector<const bf16*> rows16;
        std::vector<const float*> rows32;
        for (size_t j = 0; j < visible; ++j) {
          rows16.push_back(stored.data() + j * width);
          rows32.push_back(wide.data() + j * width);
        }
        for (const size_t num_queries : {1, 2, 3, 4, 5, 9}) {
          const std::vector<float> q = RandomFloats(rng, num_queries * width, -1.5f, 1.5f);
          std::vector<const float*> queries;
          for (size_t g = 0; g < num_queries; ++g) queries.push_back(q.data() + g * width);
          std::vector<float> scores16(num_queries * visible), scores32(num_queries * visible);
          LatentScores(queries.data(), num_queries, rows16.data(), visible, width, 0.3f, scores16.data());
          LatentScores(queries.data(), num_queries, rows32.data(), visible, width, 0.3f, scores32.data());
          SCOPED_TRACE(testing::Message()
                       << "width " << width << " visible " << visible << " queries " << num_queries);
          for (size_t g = 0; g < num_queries; ++g) {
            for (size_t j = 0; j < visible; ++j) {
              const float pair = DotBf16(queries[g], rows16[j], width) * 0.3f;
              ASSERT_EQ(Bits(scores16[g * visible + j]), Bits(pair)) << "query " << g << " row " << j;
              ASSERT_EQ(Bits(scores32[g * visible + j]), Bits(pair)) << "query " << g << " row " << j;
            }
          }
        }
      }
    }
  });
}

// Several queries over the same bf16 rows (the heads of one token, read once per pass of up to 4), on every
// target: each query's scores and context are bit for bit what the one-query kernel gives, for every count of
// queries (whole passes and a partial last one), widths with and without a remainder past whole vectors, and
// visible counts with and without a partial last step of rows, and over several key blocks (256 rows) with a
// partial last one; context widths of whole register slices, of none, and of both.
TEST(AttentionTest, LatentAttentionOfSeveralQueriesEqualsOneAtATime) {
  ForEachTarget([] {
    for (const size_t width : {7, 37, 164, 320, 576}) {  // ctx widths 5, 35, 100, 256, 512
      const size_t ctx_width = width > 64 ? width - 64 : width - 2;
      for (const size_t visible : {1, 3, 6, 33, 256, 601}) {
        std::mt19937 rng(static_cast<uint32_t>(width * 100 + visible));
        std::vector<float> src = RandomFloats(rng, visible * width, -2.0f, 2.0f);
        std::vector<std::vector<bf16>> stored(visible, std::vector<bf16>(width));
        std::vector<bf16*> dst;
        for (auto& r : stored) dst.push_back(r.data());
        StoreRowsBf16(src.data(), width, dst.data(), visible);
        std::vector<const bf16*> rows(dst.begin(), dst.end());
        for (const size_t num_queries : {1, 2, 3, 4, 5, 9}) {
          std::vector<std::vector<float>> q, ctx(num_queries, std::vector<float>(ctx_width, -1.0f));
          std::vector<const float*> queries;
          std::vector<float*> ctx_out;
          for (size_t g = 0; g < num_queries; ++g) {
            q.push_back(RandomFloats(rng, width, -1.5f, 1.5f));
            queries.push_back(q.back().data());
            ctx_out.push_back(ctx[g].data());
          }
          std::vector<float> scores(num_queries * visible);
          LatentAttentionBf16Queries(queries.data(), num_queries, rows.data(), visible, width, ctx_width,
                                     0.3f, scores.data(), ctx_out.data());
          for (size_t g = 0; g < num_queries; ++g) {
            std::vector<float> one_scores(visible), one_ctx(ctx_width);
            LatentAttentionBf16(queries[g], rows.data(), visible, width, ctx_width, 0.3f, one_scores.data(),
                                one_ctx.data());
            SCOPED_TRACE(testing::Message() << "width " << width << " visible " << visible << " queries "
                                            << num_queries << " query " << g);
            EXPECT_EQ(std::vector<float>(scores.begin() + g * visible, scores.begin() + (g + 1) * visible),
                      one_scores);
            EXPECT_EQ(ctx[g], one_ctx);
          }
        }
      }
    }
  });
}

}  // namespace
}  // namespace k3::kernels
