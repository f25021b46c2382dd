// Dispatching entry points of ops.h. Until the Highway kernels land (ops-inl.h), these forward to the
// scalar references, threading the matmuls over output rows.
#include "src/kernels/ops.h"

namespace k3::kernels {
namespace {
// Runs fn(n_begin, n_end) over N output rows split into chunks on the pool.
template <typename Fn>
void ParallelRows(size_t N, ThreadPool* pool, const Fn& fn) {
  constexpr size_t kRowsPerTask = 64;
  size_t tasks = (N + kRowsPerTask - 1) / kRowsPerTask;
  if (pool == nullptr || tasks <= 1) {
    fn(0, N);
    return;
  }
  pool->ParallelFor(tasks, [&](size_t t, size_t) { fn(t * kRowsPerTask, std::min(N, (t + 1) * kRowsPerTask)); });
}
}  // namespace

void MatMulBf16(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y, ThreadPool* pool) {
  ParallelRows(N, pool, [&](size_t n0, size_t n1) {
    for (size_t m = 0; m < M; ++m) {
      for (size_t n = n0; n < n1; ++n) scalar::MatMulBf16(x + m * K, 1, K, W + n * K, 1, y + m * N + n);
    }
  });
}

void MatMulF32(const float* x, size_t M, size_t K, const float* W, size_t N, float* y, ThreadPool* pool) {
  ParallelRows(N, pool, [&](size_t n0, size_t n1) {
    for (size_t m = 0; m < M; ++m) {
      for (size_t n = n0; n < n1; ++n) scalar::MatMulF32(x + m * K, 1, K, W + n * K, 1, y + m * N + n);
    }
  });
}

void MatMulMxfp4(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales, size_t N,
                 float* y, ThreadPool* pool) {
  ParallelRows(N, pool, [&](size_t n0, size_t n1) {
    for (size_t m = 0; m < M; ++m) {
      for (size_t n = n0; n < n1; ++n) {
        scalar::MatMulMxfp4(x + m * K, 1, K, packed + n * (K / 2), scales + n * (K / 32), 1, y + m * N + n);
      }
    }
  });
}

void RoundToBf16(float* x, size_t n) { scalar::RoundToBf16(x, n); }
void Bf16ToF32(const bf16* x, size_t n, float* y) { scalar::Bf16ToF32(x, n, y); }
void RmsNorm(const float* x, const bf16* w, size_t n, float eps, float* y) { scalar::RmsNorm(x, w, n, eps, y); }
void RmsNormNoWeight(const float* x, size_t n, float eps, float* y) { scalar::RmsNormNoWeight(x, n, eps, y); }
void GatedRmsNorm(const float* o, const float* gate, const float* w, size_t n, float eps, float* y) {
  scalar::GatedRmsNorm(o, gate, w, n, eps, y);
}
void SituGlu(const float* a, const float* b, size_t n, float beta, float linear_beta, float* out) {
  scalar::SituGlu(a, b, n, beta, linear_beta, out);
}
void SiluGlu(const float* a, const float* b, size_t n, float* out) { scalar::SiluGlu(a, b, n, out); }
float Dot(const float* a, const float* b, size_t n) { return scalar::Dot(a, b, n); }
void Axpy(float alpha, const float* x, float* y, size_t n) { scalar::Axpy(alpha, x, y, n); }
void Softmax(float* x, size_t n) { scalar::Softmax(x, n); }

}  // namespace k3::kernels
