// Dispatching entry points of the matmul kernels (ops.h): MatMulBf16, MatMulF32, MatMulMxfp4, MatMulGroup,
// and the switch of the bf16 dot-product path (matmul_dpbf16.h).
// Compiles matmul-inl.h once per SIMD target (hwy/foreach_target.h) and calls the best one the CPU
// supports at run time, so the binary is built for the baseline ISA (no -march=native).
//
// arm64: the SVE targets are not compiled here. SVE vectors are sizeless types, which C++ cannot keep in
// arrays, and matmul-inl.h holds its register tiles (accumulators, a weight chunk's vectors) in arrays.
// Each file's dispatch only picks among its own targets, so on an SVE CPU the matmuls run the NEON
// kernels (128-bit; Neoverse N2 and V2 have 128-bit SVE as well) while ops.cc's kernels run SVE.
// K3_HWY_DISABLED_TARGETS is the library-wide list (src/kernels/CMakeLists.txt).
#if defined(__aarch64__)
#undef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS ((K3_HWY_DISABLED_TARGETS + 0) | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "src/kernels/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/kernels/matmul-inl.h"

#if HWY_ONCE
namespace k3::kernels {
namespace {
std::atomic<bool> bf16_dot_products_enabled{true};
std::atomic<bool> overlap_enabled{true};
}  // namespace

bool MatMulOverlapActive() { return overlap_enabled.load(std::memory_order_relaxed); }

void SetMatMulOverlap(bool enabled) { overlap_enabled.store(enabled, std::memory_order_relaxed); }

bool Bf16DotProductsActive() {
  return bf16_dot_products_enabled.load(std::memory_order_relaxed) && dpbf16::Supported();
}

void SetBf16DotProducts(bool enabled) { bf16_dot_products_enabled.store(enabled, std::memory_order_relaxed); }

HWY_EXPORT(MatMulBf16Impl);
HWY_EXPORT(MatMulF32Impl);
HWY_EXPORT(MatMulMxfp4Impl);
HWY_EXPORT(MatMulGroupImpl);

void MatMulBf16(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(MatMulBf16Impl)(x, M, K, W, N, y, pool);
}

void MatMulF32(const float* x, size_t M, size_t K, const float* W, size_t N, float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(MatMulF32Impl)(x, M, K, W, N, y, pool);
}

void MatMulMxfp4(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales, size_t N,
                 float* y, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(MatMulMxfp4Impl)(x, M, K, packed, scales, N, y, pool);
}

void MatMulGroup(const MatMulJob* jobs, size_t num_jobs, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(MatMulGroupImpl)(jobs, num_jobs, pool);
}

}  // namespace k3::kernels
#endif  // HWY_ONCE
