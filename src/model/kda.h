// KDA attention layer (spec §2.3) over a batch: projections as one GEMM over all T tokens, then per
// sequence the short causal conv (tails carried in the state), gates, and the gated delta rule (the
// recurrence, or the chunked form for prefill chunks when KdaScratch::prefill_form says so), per-head gated
// RMSNorm and the output projection.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/thread_pool.h"
#include "src/io/model_config.h"
#include "src/kernels/kda_core.h"
#include "src/model/layer_util.h"
#include "src/model/weights.h"

namespace k3::model {

struct KdaScratch {
  kernels::KdaPrefillForm prefill_form = kernels::KdaPrefillForm::kRecurrent;
  std::vector<float> q_raw, k_raw, v_raw;  // [T, P] pre-conv projections
  std::vector<float> q, k, v;              // [T, P] after conv + SiLU (bf16 values)
  std::vector<float> low_rank;             // [T, K] f_a outputs
  std::vector<float> gate_low_rank;        // [T, K] g_a outputs (low-rank output gate)
  std::vector<float> g;                    // [T, P] log decay (fp32)
  std::vector<float> beta;                 // [T, H] (fp32)
  std::vector<float> out_gate;             // [T, P]
  std::vector<float> o;                    // [T, P] core output, then gated-norm output
  struct Worker {
    std::vector<float> q, k, v, g, beta, o;  // one head of one sequence: [n, K] / [n, V] / [n]
    std::vector<float> conv_taps;            // [W, channels of a task] the conv's taps, transposed
    kernels::KdaChunkScratch chunk;
  };
  std::vector<Worker> workers;  // one per pool thread
};

// x: [T, D] (input_layernorm output, bf16 values) -> out: [T, D]. Advances each segment's KDA state of
// layer slot `kda_index` by its rows. Sharded: the rank's heads; o_proj is row-parallel.
void KdaForward(const io::ModelConfig& cfg, const KdaWeights& w, int64_t kda_index, const float* x, int64_t T,
                std::span<const SequenceSegment> segments, KdaScratch* scratch, ThreadPool* pool, float* out,
                Collectives* collectives = nullptr);

}  // namespace k3::model
