// Block Attention Residuals mixer (spec §2.6): a softmax over depth, per token.
//   Mix(sources V_0..V_{n-1}; query q[D]):
//     key_i = V_i * rsqrt(mean(V_i^2) + eps)      (fp32, no weight)
//     score_i = key_i · q                          (q = wn ⊙ wp, the folded pseudo-query)
//     out = bf16( sum_i softmax(score)_i V_i )     (fp32 softmax and sum of the raw values)
#pragma once

#include <cstdint>

#include "src/kernels/step_env.h"

namespace k3::kernels {

// sources: n pointers to [D] bf16-valued rows; key_scratch: [D]; out: [D] (may alias no source).
void AttnResMix(const float* const* sources, int64_t n, const float* query, int64_t D, float eps,
                float* key_scratch, float* out);

// The mixer over a step's rows: out[i] = Mix(bank[t, 0 .. bank_size), current[t]; query) for t = rows[i],
// i < num_rows. bank: [T, B, D] frozen block sums; current: [T, D]; out: [num_rows, D]. On the pool.
struct AttnResBank {
  const float* bank;  // [T, B, D]
  int64_t B;          // entries per token at most
  int64_t bank_size;  // entries in use
};
void AttnResMixRows(StepEnv& env, const AttnResBank& bank, const float* current, const int64_t* rows,
                    int64_t num_rows, const float* query, int64_t D, float eps, float* out);

}  // namespace k3::kernels
