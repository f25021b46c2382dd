// AttnRes depth mixer (spec §2.6).
#include "src/kernels/attn_res.h"

#include <algorithm>

#include "src/base/bf16.h"
#include "src/base/check.h"
#include "src/kernels/ops.h"
#include "src/kernels/parallel.h"

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

void AttnResMixRows(StepEnv& env, const AttnResBank& bank, const float* current, const int64_t* rows,
                    int64_t num_rows, const float* query, int64_t D, float eps, float* out) {
  const int64_t B = bank.B, n = bank.bank_size + 1;
  const size_t workers = env.workers();
  ScratchArena::Frame frame(env.arena);
  const float** sources_of = env.arena.Take<const float*>(workers * (B + 1));  // per worker: n sources
  const int64_t key_floats = (D + 15) / 16 * 16;
  float* keys_of = env.arena.Take<float>(workers * key_floats);  // per worker: [D]
  ParallelTasks(env.pool, num_rows, n * 3 * D, [&](size_t i, size_t worker) {
    const int64_t t = rows[i];
    const float** sources = sources_of + worker * (B + 1);
    for (int64_t b = 0; b < bank.bank_size; ++b) sources[b] = bank.bank + (t * B + b) * D;
    sources[bank.bank_size] = current + t * D;
    AttnResMix(sources, n, query, D, eps, keys_of + worker * key_floats, out + i * D);
  });
}

}  // namespace k3::kernels
