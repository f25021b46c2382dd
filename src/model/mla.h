// Gated MLA without RoPE (spec §2.4) over a batch, in the absorbed (latent) form for prefill and decode:
//   latent row per token: [c (R, kv_a_layernorm'd), k_pe (Rp)] appended to the sequence's cache (bf16
//   values, stored in the state's cache dtype: bf16 by default, fp32 on request);
//   query per head: [Wuk_h^T q_nope_h (R), q_pe_h (Rp)], so score_h(t) = query · row_t / sqrt(Q);
//   ctx_h = sum_t p_t c_t (R), o_h = bf16(Wuv_h ctx_h), optional o *= sigmoid(g_proj x), then o_proj.
// Prefill and decode run the same arithmetic, so chunking a prompt does not change results.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/thread_pool.h"
#include "src/io/model_config.h"
#include "src/kernels/ops.h"
#include "src/model/latent_attention.h"
#include "src/model/layer_util.h"
#include "src/model/weights.h"

namespace k3::model {

struct MlaScratch {
  std::vector<float> q_low;                   // [T, q_lora]
  std::vector<float> q;                       // [T, H*Q]
  std::vector<float> latent;                  // [T, R + Rp]
  std::vector<float> query;                   // [H, T, R + Rp] absorbed queries
  std::vector<float> ctx;                     // [H, T, R]
  std::vector<float> head_in;                 // [H, T, nope] q_nope per head
  std::vector<float> head_out;                // [H, T, max(R, Vh)]
  std::vector<kernels::MatMulJob> head_jobs;  // [H] the per-head products of one step, one group
  std::vector<float> o;                       // [T, H*Vh]
  std::vector<float> gate;                    // [T, H*Vh]
  LatentAttentionScratch attention;           // step 4 (latent_attention.h)
  std::vector<float*> cache_rows;             // [rows of one sequence] where its new latent rows go
  std::vector<bf16*> cache_rows_bf16;         // the same for a bf16 cache
};

// x: [T, D] (input_layernorm output) -> out: [T, D]. Writes each segment's latent rows into MLA cache
// slot `mla_index` at positions [start_pos, start_pos + rows) (the caller reserved them).
void MlaForward(const io::ModelConfig& cfg, const MlaWeights& w, int64_t mla_index, const float* x, int64_t T,
                std::span<const SequenceSegment> segments, MlaScratch* scratch, ThreadPool* pool, float* out,
                Collectives* collectives = nullptr);

}  // namespace k3::model
