// AttnRes depth mixer (spec §2.6).
#include "src/kernels/attn_res.h"

#include <algorithm>

#include "src/base/bf16.h"
#include "src/base/check.h"
#include "src/kernels/ops.h"

namespace k3::kernels {

void AttnResMix(const float* const* sources, int64_t n, const float* query, int64_t D, float eps,
                float* key_scratch, float* out) {
  constexpr int64_t kMaxSources = 256;
  K3_CHECK(n >= 1 && n <= kMaxSources);
  float alpha[kMaxSources];
  for (int64_t i = 0; i < n; ++i) {
    RmsNormNoWeight(sources[i], D, eps, key_scratch);
    alpha[i] = Dot(key_scratch, query, D);
  }
  Softmax(alpha, n);
  std::fill(out, out + D, 0.0f);
  for (int64_t i = 0; i < n; ++i) Axpy(alpha[i], sources[i], out, D);
  RoundToBf16(out, D);
}

}  // namespace k3::kernels
