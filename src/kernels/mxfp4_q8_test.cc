// Tests of the MXFP4 x int8 matmuls (mxfp4_q8.h). Every kernel variant this CPU runs (q8::SupportedKernels:
// scalar, and AVX2 / AVX-VNNI / AVX512-VNNI or NEON / dotprod / I8MM) is checked against the scalar
// definition bit for bit (each variant sums each group's dot exactly and keeps y[m, n] in its own lane, so
// they agree exactly, not just to rounding order), for K = 32..4096 (also K not a multiple of 256), odd N and
// M = 1..9, with zero, denormal, huge and negative inputs and the E8M0 extremes; the group dots alone are
// checked through unit scales. Then batch and thread invariance, MatMulGroup's kMxfp4Q8 jobs on every
// Highway target (overlap on and off), the quantiser against its formula, and the accuracy of the whole
// against the fp32 MatMulMxfp4 on random data.
#include "src/kernels/mxfp4_q8.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "src/base/bf16.h"
#include "src/base/thread_pool.h"
#include "src/kernels/ops.h"

namespace k3::kernels {
namespace {

// Runs body() once per kernel variant this CPU supports, with its name in failure messages.
void ForEachKernel(const std::function<void()>& body) {
  for (q8::Kernel kernel : q8::SupportedKernels()) {
    q8::SetKernelForTest(kernel);
    SCOPED_TRACE(q8::KernelName(kernel));
    body();
  }
  q8::SetKernelForTest(q8::SupportedKernels().back());
}

// Runs body() once per Highway target of k3_kernels this CPU runs (MatMulGroup is compiled per target).
void ForEachHighwayTarget(const std::function<void()>& body) {
  const int64_t supported = hwy::SupportedTargets();
  for (int bit = 0; bit < 63; ++bit) {
    const int64_t target = int64_t{1} << bit;
    if ((supported & target) == 0) continue;
    hwy::SetSupportedTargetsForTest(target);
    if (std::string(KernelTargetName()) != hwy::TargetName(target)) continue;  // not compiled in
    SCOPED_TRACE(hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

struct Q8Rows {
  std::vector<int8_t> values;
  std::vector<float> scales;
};
Q8Rows Quantize(const std::vector<float>& x, size_t M, size_t K) {
  Q8Rows q{std::vector<int8_t>(M * K), std::vector<float>(M * K / kQ8Group)};
  QuantizeRowsQ8(x.data(), M, K, q.values.data(), q.scales.data());
  return q;
}

struct Mxfp4Matrix {
  std::vector<uint8_t> packed, scales;
};
Mxfp4Matrix RandomMxfp4(std::mt19937& rng, size_t N, size_t K, uint8_t scale_lo = 118,
                        uint8_t scale_hi = 130) {
  Mxfp4Matrix w{std::vector<uint8_t>(N * K / 2), std::vector<uint8_t>(N * K / kQ8Group)};
  for (uint8_t& b : w.packed) b = static_cast<uint8_t>(rng());
  for (uint8_t& s : w.scales) s = static_cast<uint8_t>(scale_lo + rng() % (scale_hi - scale_lo + 1));
  return w;
}

std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Equal bit for bit, or both NaN.
void ExpectSameFloats(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

std::vector<float> Definition(const Q8Rows& x, size_t M, size_t K, const Mxfp4Matrix& w, size_t N) {
  std::vector<float> y(M * N);
  scalar::MatMulMxfp4Q8(x.values.data(), x.scales.data(), M, K, w.packed.data(), w.scales.data(), N,
                        y.data());
  return y;
}

std::vector<float> RunQ8(const Q8Rows& x, size_t M, size_t K, const Mxfp4Matrix& w, size_t N,
                         ThreadPool* pool) {
  std::vector<float> y(M * N + 1, 77.0f);  // + 1: nothing past y
  MatMulMxfp4Q8(x.values.data(), x.scales.data(), M, K, w.packed.data(), w.scales.data(), N, y.data(), pool);
  EXPECT_EQ(y.back(), 77.0f) << "wrote past y";
  y.pop_back();
  return y;
}

TEST(Mxfp4Q8Test, ReportsItsKernels) {
  std::string names;
  for (q8::Kernel kernel : q8::SupportedKernels()) names += std::string(q8::KernelName(kernel)) + " ";
  // scripts/arm64_test.sh reads this line.
  std::printf("q8 kernels: dispatch picks %s (this CPU runs: %s)\n", q8::KernelName(q8::ActiveKernel()),
              names.c_str());
  ASSERT_EQ(q8::SupportedKernels().front(), q8::Kernel::kScalar);
}

TEST(Mxfp4Q8Test, QuantizerFollowsItsFormula) {
  std::mt19937 rng(1);
  constexpr size_t K = 4 * kQ8Group;
  std::vector<float> x = RandomFloats(rng, 5 * K, -3.0f, 3.0f);
  for (size_t k = 0; k < kQ8Group; ++k) x[K + k] = 0.0f;                         // row 1 group 0: zeros
  for (size_t k = 0; k < kQ8Group; ++k) x[K + kQ8Group + k] = 1e-39f * (k % 3);  // group 1: denormals
  for (size_t k = 0; k < kQ8Group; ++k) x[2 * K + k] = -3.0e38f + k * 1e37f;  // row 2 group 0: huge, negative
  for (size_t k = 0; k < kQ8Group; ++k) x[3 * K + k] = (k % 2 ? -0.5f : 0.5f) * (k + 1);  // alternating signs
  x[4 * K + 3] = std::numeric_limits<float>::quiet_NaN();
  const Q8Rows q = Quantize(x, 5, K);
  for (size_t m = 0; m < 5; ++m) {
    for (size_t g = 0; g < K / kQ8Group; ++g) {
      const float* group = &x[m * K + g * kQ8Group];
      float amax = 0.0f;
      for (size_t k = 0; k < kQ8Group; ++k) amax = std::max(amax, std::fabs(group[k]));
      const float d = q.scales[m * K / kQ8Group + g];
      if (amax < 0x1p-100f) {
        ASSERT_EQ(d, 0.0f);
      } else {
        ASSERT_EQ(d, amax / 127.0f) << "m=" << m << " g=" << g;
      }
      for (size_t s = 0; s < kQ8Group; ++s) {
        const size_t k = s < 16 ? 2 * s : 2 * (s - 16) + 1;
        const int8_t got = q.values[m * K + g * kQ8Group + s];
        int want = 0;
        if (d != 0.0f && !std::isnan(group[k])) {
          want = static_cast<int>(std::nearbyint(group[k] * (127.0f / amax)));
          want = std::clamp(want, -127, 127);
        }
        ASSERT_EQ(got, want) << "m=" << m << " g=" << g << " slot " << s << " x=" << group[k];
        if (d != 0.0f && !std::isnan(group[k])) {
          ASSERT_LE(std::fabs(group[k] - got * d), 0.5f * d * 1.0001f);
        }
      }
    }
  }
  // Halves round to even: amax 127 makes the multiplier 1, so each value is rounded as it is.
  std::vector<float> ties(kQ8Group, 0.0f);
  ties[0] = 127.0f;
  ties[2] = 2.5f;   // slot 1
  ties[4] = -3.5f;  // slot 2
  ties[1] = 0.5f;   // slot 16
  const Q8Rows t = Quantize(ties, 1, kQ8Group);
  EXPECT_EQ(t.values[1], 2);
  EXPECT_EQ(t.values[2], -4);
  EXPECT_EQ(t.values[16], 0);
}

// The quantisers of every variant (AVX2 for the x86 ones, NEON for the arm64 ones) against the definition,
// bit for bit, on random groups and on zeros, -0, denormals, tiny and huge values, halves, NaN and inf.
TEST(Mxfp4Q8Test, EveryQuantizerEqualsTheDefinition) {
  std::mt19937 rng(8);
  constexpr size_t M = 3, K = 12 * kQ8Group;
  std::vector<float> x = RandomFloats(rng, M * K, -5.0f, 5.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            1e-40f,
                            -3e-39f,
                            1e-30f,
                            3.0e38f,
                            -3.4e38f,
                            0.5f,
                            1.5f,
                            -2.5f,
                            127.0f,
                            63.5f,
                            std::numeric_limits<float>::quiet_NaN(),
                            1e-36f,
                            -1e-37f};
  for (size_t g = 0; g < 8; ++g) {  // groups 0..7 of row 1: mixes of specials and small integers
    for (size_t k = 0; k < kQ8Group; ++k) {
      x[K + g * kQ8Group + k] = (g + k) % 3 == 0 ? specials[(g * 7 + k) % 15] : static_cast<float>(k % 9) - 4;
    }
  }
  for (size_t k = 0; k < kQ8Group; ++k) x[K + 8 * kQ8Group + k] = std::numeric_limits<float>::infinity();
  x[K + 9 * kQ8Group + 5] = -std::numeric_limits<float>::infinity();
  for (size_t k = 0; k < kQ8Group; ++k) x[K + 10 * kQ8Group + k] = k % 2 ? 1e-41f : -0.0f;
  std::vector<int8_t> want_values(M * K);
  std::vector<float> want_scales(M * K / kQ8Group);
  scalar::QuantizeRowsQ8(x.data(), M, K, want_values.data(), want_scales.data());
  ForEachKernel([&] {
    const Q8Rows got = Quantize(x, M, K);
    ASSERT_EQ(got.values, want_values);
    ExpectSameFloats(got.scales, want_scales, "scales");
  });
}

// With unit scales (d = 1, E8M0 byte 128: h = 1) each y[m, n] of a K = 32 matmul is one group dot as a float,
// exact: every variant's integer dot products against the definition's.
TEST(Mxfp4Q8Test, GroupDotsAreExactOnEveryKernel) {
  std::mt19937 rng(2);
  constexpr size_t M = 9, N = 33, K = kQ8Group;
  Mxfp4Matrix w = RandomMxfp4(rng, N, K, 128, 128);
  for (size_t b = 0; b < 16; ++b) w.packed[b] = static_cast<uint8_t>(0x77);         // row 0: all +6 (x2: 12)
  for (size_t b = 0; b < 16; ++b) w.packed[16 + b] = static_cast<uint8_t>(0xFF);    // row 1: all -6
  for (size_t b = 0; b < 16; ++b) w.packed[32 + b] = static_cast<uint8_t>(b * 17);  // row 2: every code
  Q8Rows x{std::vector<int8_t>(M * K), std::vector<float>(M, 1.0f)};
  for (int8_t& v : x.values) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  for (size_t k = 0; k < K; ++k) x.values[k] = 127;  // row 0: the extremes
  for (size_t k = 0; k < K; ++k) x.values[K + k] = -127;
  for (size_t k = 0; k < K; ++k) x.values[2 * K + k] = 0;
  std::vector<float> want(M * N);
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      want[m * N + n] = static_cast<float>(scalar::Mxfp4Q8GroupDot(&x.values[m * K], &w.packed[n * K / 2]));
    }
  }
  EXPECT_EQ(want[0], 32.0f * 127 * 12);
  EXPECT_EQ(want[1], -32.0f * 127 * 12);
  ForEachKernel([&] {
    ExpectSameFloats(RunQ8(x, M, K, w, N, nullptr), want, "dots");
    ExpectSameFloats(Definition(x, M, K, w, N), want, "definition");
  });
}

TEST(Mxfp4Q8Test, EveryKernelEqualsTheDefinitionBitForBit) {
  std::mt19937 rng(3);
  ThreadPool pool3(3);
  for (size_t K : {32, 64, 96, 224, 288, 1056, 4096}) {
    for (size_t N : {1, 3, 7, 37}) {
      const size_t M = 9;
      const std::vector<float> xf = RandomFloats(rng, M * K, -4.0f, 4.0f);
      const Q8Rows x = Quantize(xf, M, K);
      const Mxfp4Matrix w = RandomMxfp4(rng, N, K);
      const std::vector<float> want = Definition(x, M, K, w, N);
      ForEachKernel([&] {
        const std::string what = "K=" + std::to_string(K) + " N=" + std::to_string(N);
        ExpectSameFloats(RunQ8(x, M, K, w, N, nullptr), want, what);
        ExpectSameFloats(RunQ8(x, M, K, w, N, &pool3), want, what + " 3 threads");
        for (size_t rows = 1; rows < M; ++rows) {  // M = 1..8: the first rows of the batch
          const std::vector<float> got = RunQ8(x, rows, K, w, N, nullptr);
          ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << what << " M=" << rows;
        }
      });
    }
  }
}

// Zero, denormal, huge and negative activations, and the E8M0 extremes (0: 2^-127, 1, 127, 254, 255: inf).
TEST(Mxfp4Q8Test, ExtremeInputsEqualTheDefinition) {
  std::mt19937 rng(4);
  constexpr size_t M = 7, K = 256, N = 9;
  std::vector<float> xf = RandomFloats(rng, M * K, -1.0f, 1.0f);
  for (size_t k = 0; k < K; ++k) {
    xf[0 * K + k] = 0.0f;
    xf[1 * K + k] = (k % 2 ? -1.0f : 1.0f) * 1e-40f * (k % 7);    // denormals (quantise to zero)
    xf[2 * K + k] = -3.0e38f + (k % 5) * 1e37f;                   // near the fp32 maximum, negative
    xf[3 * K + k] = -std::fabs(xf[3 * K + k]);                    // all negative
    xf[4 * K + k] = (k < 32) ? 1e-30f * (k + 1) : xf[4 * K + k];  // tiny but normal group
  }
  const Q8Rows x = Quantize(xf, M, K);
  Mxfp4Matrix w = RandomMxfp4(rng, N, K);
  const uint8_t extremes[] = {0, 1, 127, 254, 255};
  for (size_t n = 0; n < N; ++n) {
    for (size_t g = 0; g < K / kQ8Group; ++g) w.scales[n * K / kQ8Group + g] = extremes[(n + g) % 5];
  }
  w.scales[0] = 255;  // row 0 meets inf in group 0
  const std::vector<float> want = Definition(x, M, K, w, N);
  ForEachKernel([&] { ExpectSameFloats(RunQ8(x, M, K, w, N, nullptr), want, "extremes"); });
}

TEST(Mxfp4Q8Test, BatchAndThreadInvariance) {
  std::mt19937 rng(5);
  ThreadPool pool2(2), pool3(3);
  for (size_t K : {288, 1024}) {
    constexpr size_t M = 9, N = 301;  // several pool tasks, a partial last tile
    const Q8Rows x = Quantize(RandomFloats(rng, M * K, -2.0f, 2.0f), M, K);
    const Mxfp4Matrix w = RandomMxfp4(rng, N, K);
    ForEachKernel([&] {
      const std::vector<float> batch = RunQ8(x, M, K, w, N, nullptr);
      for (ThreadPool* pool : {&pool2, &pool3})
        ExpectSameFloats(RunQ8(x, M, K, w, N, pool), batch, "threads");
      for (size_t m = 0; m < M; ++m) {
        const Q8Rows row{std::vector<int8_t>(x.values.begin() + m * K, x.values.begin() + (m + 1) * K),
                         std::vector<float>(x.scales.begin() + m * K / kQ8Group,
                                            x.scales.begin() + (m + 1) * K / kQ8Group)};
        const std::vector<float> alone = RunQ8(row, 1, K, w, N, &pool2);
        ASSERT_TRUE(std::equal(alone.begin(), alone.end(), batch.begin() + m * N)) << "row " << m;
      }
    });
  }
}

// MatMulGroup's kMxfp4Q8 jobs equal MatMulMxfp4Q8 of QuantizeRowsQ8(x), beside bf16 and MXFP4 jobs (one
// sharing the Q8 job's x), at decode sizes where the overlap reorders tasks, on every Highway target.
TEST(Mxfp4Q8Test, GroupJobsEqualTheSingleCall) {
  std::mt19937 rng(6);
  constexpr size_t K = 512, N1 = 600, N2 = 70;  // 3 pool tasks per job of N1 rows
  std::vector<float> x1 = RandomFloats(rng, 2 * K, -1.0f, 1.0f);
  for (float& v : x1) v = RoundBf16(v);
  const std::vector<float> x2 = RandomFloats(rng, 5 * K, -1.0f, 1.0f);
  const Mxfp4Matrix wa = RandomMxfp4(rng, N1, K), wb = RandomMxfp4(rng, N2, K);
  std::vector<bf16> wc(N1 * K);
  for (bf16& v : wc) v = FloatToBf16(std::uniform_real_distribution<float>(-1, 1)(rng));
  ThreadPool pool3(3);
  for (size_t M : {1, 2, 5}) {
    const std::vector<float>& x = M == 5 ? x2 : x1;
    const Q8Rows q = Quantize(x, M, K);
    std::vector<float> want_a(M * N1), want_b(M * N2), want_c(M * N1), want_d(M * N2);
    MatMulMxfp4Q8(q.values.data(), q.scales.data(), M, K, wa.packed.data(), wa.scales.data(), N1,
                  want_a.data(), nullptr);
    MatMulMxfp4Q8(q.values.data(), q.scales.data(), M, K, wb.packed.data(), wb.scales.data(), N2,
                  want_b.data(), nullptr);
    ForEachHighwayTarget([&] {
      MatMulBf16(x.data(), M, K, wc.data(), N1, want_c.data(), nullptr);  // this target's results
      MatMulMxfp4(x.data(), M, K, wb.packed.data(), wb.scales.data(), N2, want_d.data(), nullptr);
      for (bool overlap : {true, false}) {
        SetMatMulOverlap(overlap);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool3}) {
          std::vector<float> a(M * N1), b(M * N2), c(M * N1), d(M * N2);
          const MatMulJob jobs[] = {
              MatMulJob::Mxfp4Q8(x.data(), M, K, wa.packed.data(), wa.scales.data(), N1, a.data()),
              MatMulJob::Bf16(x.data(), M, K, wc.data(), N1, c.data()),
              MatMulJob::Mxfp4Q8(x.data(), M, K, wb.packed.data(), wb.scales.data(), N2, b.data()),
              MatMulJob::Mxfp4(x.data(), M, K, wb.packed.data(), wb.scales.data(), N2, d.data()),
          };
          MatMulGroup(jobs, 4, pool);
          const std::string what = "M=" + std::to_string(M) + (overlap ? " overlap" : "");
          ExpectSameFloats(a, want_a, what + " job 0");
          ExpectSameFloats(b, want_b, what + " job 2");
          ExpectSameFloats(c, want_c, what + " bf16 job");
          ExpectSameFloats(d, want_d, what + " fp32 MXFP4 job");
        }
      }
      SetMatMulOverlap(true);
    });
  }
}

// Accuracy of the fast numerics against the fp32 path on random data (bf16 activations as the model's).
TEST(Mxfp4Q8Test, CloseToTheFp32MatMul) {
  std::mt19937 rng(7);
  for (size_t K : {1024, 3584}) {
    constexpr size_t M = 4, N = 256;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(M * K);
    for (float& v : x) v = RoundBf16(normal(rng));
    const Mxfp4Matrix w = RandomMxfp4(rng, N, K);
    std::vector<float> exact(M * N), fast(M * N);
    MatMulMxfp4(x.data(), M, K, w.packed.data(), w.scales.data(), N, exact.data(), nullptr);
    MatMulJob job = MatMulJob::Mxfp4Q8(x.data(), M, K, w.packed.data(), w.scales.data(), N, fast.data());
    MatMulGroup(&job, 1, nullptr);
    double err = 0, norm = 0;
    for (size_t i = 0; i < M * N; ++i) {
      err += (double{fast[i]} - exact[i]) * (double{fast[i]} - exact[i]);
      norm += double{exact[i]} * exact[i];
    }
    const double rel_l2 = std::sqrt(err / norm);
    std::printf("K=%zu: relative L2 of the int8 path against fp32: %.3g\n", K, rel_l2);
    EXPECT_LT(rel_l2, 1e-2);
    EXPECT_GT(rel_l2, 0.0);  // the activations are quantised: the results must differ somewhere
  }
}

}  // namespace
}  // namespace k3::kernels
