// Causal softmax attention of a batch's absorbed MLA queries over each sequence's latent cache (step 4 of
// MlaForward, spec §2.4): how the work of one step is cut into pool tasks.
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
#include <vector>

#include "src/base/bf16.h"
#include "src/base/thread_pool.h"
#include "src/model/layer_util.h"

namespace k3::model {

struct LatentAttentionScratch {
  std::vector<std::vector<float>> scores;               // per worker: [heads of a task, keys of a chunk]
  std::vector<std::vector<const float*>> rows;          // per worker: the cached rows of a part (fp32 cache)
  std::vector<std::vector<const bf16*>> rows_bf16;      // per worker: the same for a bf16 cache
  std::vector<std::vector<const float*>> head_queries;  // per worker: [heads of a task] their queries
  std::vector<std::vector<float*>> head_ctx;            // per worker: [heads of a task] where ctx goes
  std::vector<std::vector<float>> chunk_stats;          // per worker: [2, heads of a task] max, sum
  std::vector<std::vector<float>> partials;             // per worker: [heads of a task] chunk results
  std::vector<float> shared_partials;                   // split parts: [T, H] chunk results
};

// query: [H, T, R + Rp] absorbed queries (query[h, t] = [Wuk_h^T q_nope, q_pe]); ctx: [H, T, R] out,
// ctx[h, t] = sum_j softmax_j(scale * query[h, t] . row_j) c_j over the rows j <= t's position of layer
// `mla_index` of t's sequence (which already holds the step's new rows).
void CausalLatentAttention(int64_t H, int64_t R, int64_t Rp, int64_t mla_index, const float* query, int64_t T,
                           std::span<const SequenceSegment> segments, float scale, LatentAttentionScratch* s,
                           ThreadPool* pool, float* ctx);

}  // namespace k3::model
