// Dispatching entry points of the element-wise and row kernels of ops.h. Compiles ops-inl.h once per
// SIMD target (hwy/foreach_target.h) and calls the best one the CPU supports at run time. The matmuls
// live in matmul.cc, the scalar references in ops_scalar.cc.
#include <cstddef>
#include <vector>

#include "src/kernels/kda_core.h"
#include "src/kernels/layer_ops.h"
#include "src/kernels/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/kernels/ops-inl.h"
// After ops-inl.h, whose building blocks it uses.
#include "src/kernels/kda_ops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace k3::kernels::HWY_NAMESPACE {
// Name of the target this copy was compiled for (to report and test the dispatch).
const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }
}  // namespace k3::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace k3::kernels {

HWY_EXPORT(TargetNameImpl);
HWY_EXPORT(RoundToBf16Impl);
HWY_EXPORT(Bf16ToF32Impl);
HWY_EXPORT(RmsNormImpl);
HWY_EXPORT(RmsNormNoWeightImpl);
HWY_EXPORT(GatedRmsNormImpl);
HWY_EXPORT(SituGluImpl);
HWY_EXPORT(SiluGluImpl);
HWY_EXPORT(DotImplExport);
HWY_EXPORT(AxpyImpl);
HWY_EXPORT(SoftmaxStatsImpl);
HWY_EXPORT(F32ToBf16Impl);
HWY_EXPORT(DotBf16ImplExport);
HWY_EXPORT(AxpyBf16Impl);
HWY_EXPORT(LatentScoresF32Impl);
HWY_EXPORT(LatentScoresBf16Impl);
HWY_EXPORT(LatentAttentionBf16QueriesImpl);
HWY_EXPORT(KdaRecurrentImpl);
HWY_EXPORT(CausalConvSiluImpl);

const char* KernelTargetName() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }

void RoundToBf16(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(RoundToBf16Impl)(x, n); }
void Bf16ToF32(const bf16* x, size_t n, float* y) { HWY_DYNAMIC_DISPATCH(Bf16ToF32Impl)(x, n, y); }
void RmsNorm(const float* x, const bf16* w, size_t n, float eps, float* y) {
  HWY_DYNAMIC_DISPATCH(RmsNormImpl)(x, w, n, eps, y);
}
void RmsNormNoWeight(const float* x, size_t n, float eps, float* y) {
  HWY_DYNAMIC_DISPATCH(RmsNormNoWeightImpl)(x, n, eps, y);
}
void GatedRmsNorm(const float* o, const float* gate, const float* w, size_t n, float eps, float* y) {
  HWY_DYNAMIC_DISPATCH(GatedRmsNormImpl)(o, gate, w, n, eps, y);
}
void SituGlu(const float* a, const float* b, size_t n, float beta, float linear_beta, float* out) {
  HWY_DYNAMIC_DISPATCH(SituGluImpl)(a, b, n, beta, linear_beta, out);
}
void SiluGlu(const float* a, const float* b, size_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluGluImpl)(a, b, n, out);
}
float Dot(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(DotImplExport)(a, b, n); }
void Axpy(float alpha, const float* x, float* y, size_t n) { HWY_DYNAMIC_DISPATCH(AxpyImpl)(alpha, x, y, n); }
void Softmax(float* x, size_t n, float* max, float* sum) {
  HWY_DYNAMIC_DISPATCH(SoftmaxStatsImpl)(x, n, max, sum);
}
void F32ToBf16(const float* x, size_t n, bf16* y) { HWY_DYNAMIC_DISPATCH(F32ToBf16Impl)(x, n, y); }
float DotBf16(const float* a, const bf16* b, size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotBf16ImplExport)(a, b, n);
}
void AxpyBf16(float alpha, const bf16* x, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(AxpyBf16Impl)(alpha, x, y, n);
}
void LatentScores(const float* const* queries, size_t num_queries, const float* const* rows, size_t visible,
                  size_t width, float scale, float* scores) {
  HWY_DYNAMIC_DISPATCH(LatentScoresF32Impl)(queries, num_queries, rows, visible, width, scale, scores);
}
void LatentScores(const float* const* queries, size_t num_queries, const bf16* const* rows, size_t visible,
                  size_t width, float scale, float* scores) {
  HWY_DYNAMIC_DISPATCH(LatentScoresBf16Impl)(queries, num_queries, rows, visible, width, scale, scores);
}
void LatentAttentionBf16Queries(const float* const* queries, size_t num_queries, const bf16* const* rows,
                                size_t visible, size_t width, size_t ctx_width, float scale, float* scores,
                                float* const* ctx, float* max, float* sum) {
  HWY_DYNAMIC_DISPATCH(LatentAttentionBf16QueriesImpl)
  (queries, num_queries, rows, visible, width, ctx_width, scale, scores, ctx, max, sum);
}

void KdaRecurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                  int64_t n, int64_t K, int64_t V, float* S, float* o) {
  thread_local std::vector<float> decay, u;  // [K], [V]
  if (decay.size() < static_cast<size_t>(K)) decay.resize(static_cast<size_t>(K));
  if (u.size() < static_cast<size_t>(V)) u.resize(static_cast<size_t>(V));
  HWY_DYNAMIC_DISPATCH(KdaRecurrentImpl)
  (q, k, v, g, beta, static_cast<size_t>(n), static_cast<size_t>(K), static_cast<size_t>(V), S, o,
   decay.data(), u.data());
}
void CausalConvSilu(const float* raw, const float* taps, size_t W, size_t P, size_t rows, size_t c0,
                    size_t c1, float* tail, float* taps_by_offset, float* out) {
  if (c1 <= c0) return;
  HWY_DYNAMIC_DISPATCH(CausalConvSiluImpl)(raw, taps, W, P, rows, c0, c1, tail, taps_by_offset, out);
}

}  // namespace k3::kernels
#endif  // HWY_ONCE
