// Causal softmax attention of a batch's absorbed MLA queries over each sequence's latent cache (step 4 of
// the MLA layer, spec §2.4): how the work of one step is cut into pool tasks.
//
// A query sees the cached rows 0 .. its position. Rows are taken in key chunks of
// kernels::kLatentKeysPerChunk at fixed positions (layer_ops.h): a query that sees one chunk gets one kernel
// call; a longer one gets a call per chunk and their join (kernels::CombineLatentChunks), so its result
// depends on its position only, never on the batch, the thread count or prefill against decode.
// Tasks are (sequence, slice of heads, part of the sequence's chunks):
//   - many sequences or heads for the threads: one part, slices of heads (LatentAttentionHeadsPerTask),
//     each task joining its own chunks;
//   - few (a small decode batch over a long cache): all heads in each task and the chunks split into
//     parts, so every part of the cache is read by one task for all heads; the chunk results go to a
//     shared buffer and a second loop joins them.
#pragma once

#include <cstdint>
#include <span>

#include "src/kernels/latent_rows.h"
#include "src/kernels/step_env.h"

namespace k3::kernels {

// The batch's absorbed queries: query [H, T, R + Rp], query[h, t] = [Wuk_h^T q_nope, q_pe].
struct LatentQueries {
  const float* query;
  int64_t H, T, R, Rp;
  float scale;  // 1 / sqrt(Q)
};

// ctx: [H, T, R] out, ctx[h, t] = sum_j softmax_j(scale * query[h, t] . row_j) c_j over the rows j <= t's
// position of t's sequence (whose cache already holds the step's new rows). Working memory from env.arena.
void CausalLatentAttention(StepEnv& env, const LatentQueries& queries,
                           std::span<const LatentSequence> sequences, float* ctx);

}  // namespace k3::kernels
