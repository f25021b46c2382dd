// Numeric kernels of the engine: raw pointers and sizes in, no model types, no allocation.
//
// Every kernel here has two implementations with the same contract:
//   k3::kernels::X          the fast one (Highway SIMD with runtime dispatch, threaded through `pool`)
//   k3::kernels::scalar::X  the scalar reference beside it (ops_scalar.cc): the oracle for kernel tests.
// Results agree to fp32 rounding-order noise (tests use a relative tolerance of 1e-5 on dot products).
//
// Conventions. Activations are fp32 arrays that usually hold bf16-representable values (the model rounds
// with RoundToBf16 where the reference rounds, spec §2.0). Weights are stored [N, K] row-major as in the
// checkpoint ("x @ W^T"). `pool` may be nullptr (run on the calling thread).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/base/bf16.h"
#include "src/base/thread_pool.h"

namespace k3::kernels {

// ---- GEMM / GEMV ------------------------------------------------------------------------------------
// y[m, n] = sum_k x[m, k] * W[n, k]; x [M, K] fp32, W [N, K] bf16, y [M, N] fp32 (fp32 accumulation,
// not rounded). Strides: x rows are K apart, y rows are N apart.
// Batch invariance (all MatMul*): on a given CPU target, row m of y is bit-identical whatever M, the
// other rows of x and the pool size, so batching requests never changes a result.
void MatMulBf16(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y, ThreadPool* pool);
// Same with fp32 weights.
void MatMulF32(const float* x, size_t M, size_t K, const float* W, size_t N, float* y, ThreadPool* pool);
// Same with MXFP4 weights (spec §3.3): packed [N, K/2] (low nibble = even column), scales [N, K/32]
// (E8M0, value 2^(s-127)). Dequantised inside the kernel; K % 32 == 0.
void MatMulMxfp4(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales, size_t N,
                 float* y, ThreadPool* pool);

// Several matmuls under one fork-join of the pool: the routed experts of a MoE layer, or the
// projections of one input. Job j gives y_j exactly (bit for bit) what the single call of its kind
// would; the group only saves the per-call start and end of the pool loop and balances the rows of all
// jobs over the threads. Jobs with the same x, M, K and kind share one copy of x in the kernel's layout.
// kMxfp4Q8: MXFP4 weights with x quantised per 32-value group to int8 ("fast" numerics, mxfp4_q8.h; the
// group quantises x once per distinct x) and multiplied as MatMulMxfp4Q8 does, bit for bit.
enum class WeightKind : uint8_t { kBf16, kF32, kMxfp4, kMxfp4Q8 };
struct MatMulJob {
  WeightKind kind = WeightKind::kBf16;
  const float* x = nullptr;  // [M, K]
  size_t M = 0, K = 0, N = 0;
  const bf16* bf16_weights = nullptr;  // kBf16: [N, K]
  const float* f32_weights = nullptr;  // kF32: [N, K]
  const uint8_t* packed = nullptr;     // kMxfp4, kMxfp4Q8: [N, K/2]
  const uint8_t* scales = nullptr;     // kMxfp4, kMxfp4Q8: [N, K/32]
  float* y = nullptr;                  // [M, N]

  static MatMulJob Bf16(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y) {
    MatMulJob job{WeightKind::kBf16, x, M, K, N};
    job.bf16_weights = W;
    job.y = y;
    return job;
  }
  static MatMulJob F32(const float* x, size_t M, size_t K, const float* W, size_t N, float* y) {
    MatMulJob job{WeightKind::kF32, x, M, K, N};
    job.f32_weights = W;
    job.y = y;
    return job;
  }
  static MatMulJob Mxfp4(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales,
                         size_t N, float* y) {
    MatMulJob job{WeightKind::kMxfp4, x, M, K, N};
    job.packed = packed;
    job.scales = scales;
    job.y = y;
    return job;
  }
  static MatMulJob Mxfp4Q8(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales,
                           size_t N, float* y) {
    MatMulJob job = Mxfp4(x, M, K, packed, scales, N, y);
    job.kind = WeightKind::kMxfp4Q8;
    return job;
  }
};
void MatMulGroup(const MatMulJob* jobs, size_t num_jobs, ThreadPool* pool);

// bf16 and MXFP4 matmuls (MatMulBf16, MatMulMxfp4 and such jobs of MatMulGroup) compute the rows of x
// that hold bf16 values with the CPU's bf16 dot-product instruction where it has one (x86 AVX512_BF16,
// MXFP4 also needs AVX512_VBMI; arm64 BFDOT for bf16 weights; matmul_dpbf16.h): fewer instructions per weight
// byte, so decode streams weights faster. Such rows agree with the fp32 path to rounding order.
// Bf16DotProductsActive says whether that path is in use; SetBf16DotProducts(false) turns it off process-wide
// (tests of the fp32 path, benchmark comparisons), true turns it back on where the CPU has it. Not to be
// called while a matmul runs.
bool Bf16DotProductsActive();
void SetBf16DotProducts(bool enabled);

// Overlap: in a MatMulGroup at decode sizes (x of one or two rows), the MXFP4 jobs' tasks are bound by
// their decode and the bf16 jobs' tasks by memory, so the group runs each bf16 task on the thread that ran
// MXFP4 tasks just before it, and those prefetch its weights as they go (matmul_overlap.h). Results are
// bit-identical either way. On by default; SetMatMulOverlap(false) runs the tasks in job order without the
// prefetches (tests, benchmark comparisons). Not to be called while a matmul runs.
bool MatMulOverlapActive();
void SetMatMulOverlap(bool enabled);
// Most x rows of a job whose tasks take part in the overlap (more rows make bf16 tasks compute-bound too).
inline constexpr size_t kMatMulOverlapMaxRows = 2;

// ---- MXFP4 ---------------------------------------------------------------------------------------------
// E2M1 code (low 4 bits of `code`) -> value: sign bit 3, magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}.
float E2M1ToFloat(uint8_t code);
// E8M0 scale byte -> 2^(s - 127) (s = 0 gives 2^-127, a subnormal; s = 255 gives 2^128 = inf in fp32).
float E8M0ToFloat(uint8_t scale);
// One row of K logical values from K/2 packed bytes and K/32 scales.
void DequantMxfp4Row(const uint8_t* packed, const uint8_t* scales, size_t K, float* out);

// ---- element-wise and row ops --------------------------------------------------------------------------
// x[i] = bf16(x[i]) (round to nearest even).
void RoundToBf16(float* x, size_t n);
// Widen bf16 -> fp32.
void Bf16ToF32(const bf16* x, size_t n, float* y);
// KimiRMSNorm (spec §2.1): y = bf16(w * bf16(x * rsqrt(mean(x^2) + eps))), w bf16. y may alias x.
void RmsNorm(const float* x, const bf16* w, size_t n, float eps, float* y);
// Unweighted: y = x * rsqrt(mean(x^2) + eps) in fp32, not rounded (AttnRes keys). y may alias x.
void RmsNormNoWeight(const float* x, size_t n, float eps, float* y);
// Gated RMSNorm (KDA o_norm, spec §2.1): y = bf16((o * rsqrt(mean(o^2) + eps)) * w * sigmoid(gate)),
// all fp32 math, w fp32. y may alias o.
void GatedRmsNorm(const float* o, const float* gate, const float* w, size_t n, float eps, float* y);
// SiTU-GLU (spec §2.2): out = bf16(beta*tanh(a/beta)*sigmoid(a) * lbeta*tanh(b/lbeta)). out may alias a.
void SituGlu(const float* a, const float* b, size_t n, float beta, float linear_beta, float* out);
// SiLU-GLU: out = bf16(a * sigmoid(a) * b). out may alias a.
void SiluGlu(const float* a, const float* b, size_t n, float* out);
// sum_i a[i] * b[i], fp32.
float Dot(const float* a, const float* b, size_t n);
// y[i] += alpha * x[i].
void Axpy(float alpha, const float* x, float* y, size_t n);
// In-place numerically stable softmax over n values (fp32). Where max / sum are not null they receive the
// largest input and the sum of exp(x - largest) the outputs were divided by.
void Softmax(float* x, size_t n, float* max = nullptr, float* sum = nullptr);

// ---- bf16 rows (the MLA latent cache, spec §6) --------------------------------------------------------
// y[i] = bf16(x[i]), round to nearest even (FloatToBf16, bit for bit).
void F32ToBf16(const float* x, size_t n, bf16* y);
// sum_i a[i] * b[i] with b bf16 (widened exactly), summed as the latent attention sums one (query, row)
// pair (LatentScores, layer_ops.h): the whole vectors in one vector accumulator, its lanes summed, then the
// remainder in order. Dot sums in four accumulators, so the two agree to rounding noise.
float DotBf16(const float* a, const bf16* b, size_t n);
// y[i] += alpha * x[i], x bf16; equals Axpy over the widened x bit for bit (the same vector MulAdd).
void AxpyBf16(float alpha, const bf16* x, float* y, size_t n);

// ---- dispatch -----------------------------------------------------------------------------------------
// Name of the SIMD target the kernels run on in this process (e.g. "AVX3", "AVX2"), for logs/benchmarks.
const char* KernelTargetName();

// ---- scalar references ---------------------------------------------------------------------------------
namespace scalar {
void MatMulBf16(const float* x, size_t M, size_t K, const bf16* W, size_t N, float* y);
void MatMulF32(const float* x, size_t M, size_t K, const float* W, size_t N, float* y);
void MatMulMxfp4(const float* x, size_t M, size_t K, const uint8_t* packed, const uint8_t* scales, size_t N,
                 float* y);
void RoundToBf16(float* x, size_t n);
void Bf16ToF32(const bf16* x, size_t n, float* y);
void RmsNorm(const float* x, const bf16* w, size_t n, float eps, float* y);
void RmsNormNoWeight(const float* x, size_t n, float eps, float* y);
void GatedRmsNorm(const float* o, const float* gate, const float* w, size_t n, float eps, float* y);
void SituGlu(const float* a, const float* b, size_t n, float beta, float linear_beta, float* out);
void SiluGlu(const float* a, const float* b, size_t n, float* out);
float Dot(const float* a, const float* b, size_t n);
void Axpy(float alpha, const float* x, float* y, size_t n);
void Softmax(float* x, size_t n);
void F32ToBf16(const float* x, size_t n, bf16* y);
float DotBf16(const float* a, const bf16* b, size_t n);
void AxpyBf16(float alpha, const bf16* x, float* y, size_t n);
}  // namespace scalar

}  // namespace k3::kernels
