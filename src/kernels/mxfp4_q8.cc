// MXFP4 x int8 matmuls (mxfp4_q8.h): the scalar definition, the quantiser, the choice of kernel variant at
// run time and the threaded MatMulMxfp4Q8. The variants live in mxfp4_q8_x86.cc and mxfp4_q8_arm.cc.
#include "src/kernels/mxfp4_q8.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "hwy/base.h"
#include "src/kernels/mxfp4_q8_driver-inl.h"
#include "src/kernels/mxfp4_tables.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif

namespace k3::kernels {
namespace {

// Adding and subtracting 1.5 * 2^23 rounds an fp32 of magnitude below 2^22 to an integer, to nearest even
// in the default rounding mode: the same as std::nearbyint here, without a library call per value.
constexpr float kRoundingMagic = 12582912.0f;

void QuantizeGroup(const float* x, int8_t* q, float* d) {
  float amax = 0.0f;
  for (size_t k = 0; k < kQ8Group; ++k) amax = std::max(amax, std::fabs(x[k]));  // NaN never wins
  float inverse;
  if (!q8::GroupScale(amax, d, &inverse)) {
    std::memset(q, 0, kQ8Group);
    return;
  }
  for (size_t s = 0; s < kQ8Group; ++s) {
    const size_t k = s < kQ8Group / 2 ? 2 * s : 2 * (s - kQ8Group / 2) + 1;  // the Q8 layout's slot order
    const float scaled = x[k] * inverse;
    float rounded = (scaled + kRoundingMagic) - kRoundingMagic;
    if (!(rounded == rounded)) rounded = 0.0f;  // NaN (a NaN or an infinite input)
    rounded = std::min(127.0f, std::max(-127.0f, rounded));
    q[s] = static_cast<int8_t>(static_cast<int>(rounded));
  }
}

// The scalar variant: the definition, one output at a time.
void ScalarRowBlock(const q8::RowBlockArgs& a) {
  for (size_t m = 0; m < a.M; ++m) {
    for (size_t n = a.n_begin; n < a.n_end; ++n) {
      scalar::MatMulMxfp4Q8(a.x_values + m * a.K, a.x_scales + m * (a.K / kQ8Group), 1, a.K,
                            a.packed + n * (a.K / 2), a.scales + n * (a.K / kQ8Group), 1, a.y + m * a.N + n);
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// AVX-VNNI: CPUID leaf 7, sub-leaf 1, EAX bit 4 (clang 14's __builtin_cpu_supports does not know it). The
// caller has checked AVX2, which includes the OS saving the YMM registers.
bool HasAvxVnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
}
#endif

using RowBlockFn = void (*)(const q8::RowBlockArgs&);

RowBlockFn RowBlockOf(q8::Kernel kernel) {
  switch (kernel) {
#if defined(__x86_64__) && defined(__GNUC__)
    case q8::Kernel::kAvx2:
      return q8::avx2::RowBlock;
    case q8::Kernel::kAvxVnni:
      return q8::avx_vnni::RowBlock;
    case q8::Kernel::kAvx512Vnni:
      return q8::avx512_vnni::RowBlock;
#endif
#if defined(__aarch64__) && defined(__GNUC__)
    case q8::Kernel::kNeon:
      return q8::neon::RowBlock;
    case q8::Kernel::kNeonDot:
      return q8::neon_dot::RowBlock;
    case q8::Kernel::kI8mm:
      return q8::i8mm::RowBlock;
#endif
    default:
      return ScalarRowBlock;
  }
}

const std::vector<q8::Kernel>& Supported() {
  static const std::vector<q8::Kernel> kernels = [] {
    std::vector<q8::Kernel> list{q8::Kernel::kScalar};
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
      list.push_back(q8::Kernel::kAvx2);
      if (HasAvxVnni()) list.push_back(q8::Kernel::kAvxVnni);
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
          __builtin_cpu_supports("avx512vnni")) {
        list.push_back(q8::Kernel::kAvx512Vnni);
      }
    }
#endif
#if defined(__aarch64__) && defined(__GNUC__)
    list.push_back(q8::Kernel::kNeon);
#if defined(__linux__)
    if ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0) {
      list.push_back(q8::Kernel::kNeonDot);
      if ((getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0) list.push_back(q8::Kernel::kI8mm);
    }
#endif
#endif
    return list;
  }();
  return kernels;
}

std::atomic<int> forced_kernel{-1};  // SetKernelForTest's choice, -1: none

// Output rows per pool task, as MatMulGroup cuts them (matmul-inl.h, RowsPerTask): at decode (up to 16 x
// rows) at least 256 KiB of weights and up to 256 rows, else about 64 tasks of at most 32 rows.
size_t RowsPerTask(size_t M, size_t N, size_t weight_row_bytes) {
  const bool decode = M <= 16;
  size_t rows = (N + 63) / 64;
  if (decode) rows = std::max(rows, (size_t{256} << 10) / std::max<size_t>(1, weight_row_bytes));
  rows = (rows + q8::kQ8TileN - 1) / q8::kQ8TileN * q8::kQ8TileN;
  return std::clamp<size_t>(rows, q8::kQ8TileN, decode ? 256 : 32);
}

}  // namespace

namespace q8 {

const char* KernelName(Kernel kernel) {
  switch (kernel) {
    case Kernel::kScalar:
      return "scalar";
    case Kernel::kNeon:
      return "neon";
    case Kernel::kNeonDot:
      return "neon-dotprod";
    case Kernel::kI8mm:
      return "i8mm";
    case Kernel::kAvx2:
      return "avx2";
    case Kernel::kAvxVnni:
      return "avx-vnni";
    case Kernel::kAvx512Vnni:
      return "avx512-vnni";
  }
  return "?";
}

std::vector<Kernel> SupportedKernels() { return Supported(); }

Kernel ActiveKernel() {
  const int forced = forced_kernel.load(std::memory_order_relaxed);
  return forced >= 0 ? static_cast<Kernel>(forced) : Supported().back();
}

void SetKernelForTest(Kernel kernel) {
  HWY_ASSERT(std::find(Supported().begin(), Supported().end(), kernel) != Supported().end());
  forced_kernel.store(static_cast<int>(kernel), std::memory_order_relaxed);
}

void RowBlock(const RowBlockArgs& args) { RowBlockOf(ActiveKernel())(args); }

}  // namespace q8

void QuantizeRowsQ8(const float* x, size_t M, size_t K, int8_t* values, float* scales) {
  HWY_ASSERT(K % kQ8Group == 0);
  switch (q8::ActiveKernel()) {
#if defined(__x86_64__) && defined(__GNUC__)
    case q8::Kernel::kAvx2:
    case q8::Kernel::kAvxVnni:
    case q8::Kernel::kAvx512Vnni:
      return q8::avx2::QuantizeGroups(x, M * K / kQ8Group, values, scales);
#endif
#if defined(__aarch64__) && defined(__GNUC__)
    case q8::Kernel::kNeon:
    case q8::Kernel::kNeonDot:
    case q8::Kernel::kI8mm:
      return q8::neon::QuantizeGroups(x, M * K / kQ8Group, values, scales);
#endif
    default:
      return scalar::QuantizeRowsQ8(x, M, K, values, scales);
  }
}

void MatMulMxfp4Q8(const int8_t* x_values, const float* x_scales, size_t M, size_t K, const uint8_t* packed,
                   const uint8_t* scales, size_t N, float* y, ThreadPool* pool) {
  HWY_ASSERT(K % kQ8Group == 0);
  if (M == 0 || N == 0) return;
  const size_t rows_per_task = RowsPerTask(M, N, K / 2 + K / kQ8Group);
  const size_t num_tasks = (N + rows_per_task - 1) / rows_per_task;
  const RowBlockFn row_block = RowBlockOf(q8::ActiveKernel());
  auto run_task = [&](size_t task, size_t /*worker*/) {
    q8::RowBlockArgs args{x_values,
                          x_scales,
                          M,
                          K,
                          packed,
                          scales,
                          y,
                          N,
                          task * rows_per_task,
                          std::min(N, (task + 1) * rows_per_task)};
    row_block(args);
  };
  if (pool == nullptr || pool->num_threads() == 1 || num_tasks == 1) {
    for (size_t task = 0; task < num_tasks; ++task) run_task(task, 0);
  } else {
    pool->ParallelFor(num_tasks, run_task);
  }
}

namespace scalar {

void QuantizeRowsQ8(const float* x, size_t M, size_t K, int8_t* values, float* scales) {
  HWY_ASSERT(K % kQ8Group == 0);
  const size_t groups = K / kQ8Group;
  for (size_t m = 0; m < M; ++m) {
    for (size_t g = 0; g < groups; ++g) {
      QuantizeGroup(x + m * K + g * kQ8Group, values + m * K + g * kQ8Group, scales + m * groups + g);
    }
  }
}

int32_t Mxfp4Q8GroupDot(const int8_t* x_values, const uint8_t* packed) {
  const int8_t* w = Mxfp4Tables().e2m1_x2;
  int32_t dot = 0;
  for (size_t b = 0; b < kQ8Group / 2; ++b) {
    dot += int32_t{x_values[b]} * w[packed[b] & 0x0F];               // even element 2 b
    dot += int32_t{x_values[kQ8Group / 2 + b]} * w[packed[b] >> 4];  // odd element 2 b + 1
  }
  return dot;
}

void MatMulMxfp4Q8(const int8_t* x_values, const float* x_scales, size_t M, size_t K, const uint8_t* packed,
                   const uint8_t* scales, size_t N, float* y) {
  HWY_ASSERT(K % kQ8Group == 0);
  const size_t groups = K / kQ8Group;
  const float* half = Mxfp4Tables().e8m0_half;
  for (size_t m = 0; m < M; ++m) {
    for (size_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (size_t g = 0; g < groups; ++g) {
        const int32_t dot = Mxfp4Q8GroupDot(x_values + m * K + g * kQ8Group, packed + n * (K / 2) + g * 16);
        // Separate statements: no compiler may fuse the multiply and the add (the kernels do not).
        const float factor = x_scales[m * groups + g] * half[scales[n * groups + g]];
        const float term = static_cast<float>(dot) * factor;
        acc = acc + term;
      }
      y[m * N + n] = acc;
    }
  }
}

}  // namespace scalar

}  // namespace k3::kernels
