// What the layers of src/model share: the description of one sequence's rows inside a batch, the step a
// layer function runs in (LayerStep: the rank's config, the batch, the kernels' StepEnv), and the bf16
// "nn.Linear" of a weight matrix as a kernels::MatMulJob. The layers compose kernels; how their work is
// cut over threads, where their working memory comes from and where ranks meet is the kernels' business
// (kernels/step_env.h).
#pragma once

#include <cstdint>
#include <span>

#include "src/io/model_config.h"
#include "src/kernels/kda_core.h"
#include "src/kernels/ops.h"
#include "src/kernels/step_env.h"
#include "src/model/sequence_state.h"
#include "src/model/weights.h"

namespace k3::model {

// One sequence's new tokens inside the batch's stacked [T, ...] activations.
struct SequenceSegment {
  ModelSequenceState* state = nullptr;
  int64_t row_begin = 0;  // first row in the batch
  int64_t rows = 0;       // new tokens
  int64_t start_pos = 0;  // position of the first new token (tokens already in the state)
};

// One step of one layer: everything a layer function needs besides its weights, input and output.
struct LayerStep {
  const io::ModelConfig& cfg;                 // the rank's config (LocalConfig: its heads)
  int64_t T = 0;                              // rows in the batch
  std::span<const SequenceSegment> segments;  // each sequence's rows (attention layers)
  kernels::StepEnv& env;                      // pool, scratch arena, collectives, numerics
  kernels::KdaPrefillForm kda_prefill_form = kernels::KdaPrefillForm::kRecurrent;
};

// y [T, rows(W)] = x [T, cols(W)] @ W^T as a matmul job (kernels::Linears rounds y to bf16 afterwards, as
// the reference's nn.Linear does; spec §2.0).
inline kernels::MatMulJob LinearJob(const float* x, int64_t T, const Bf16Matrix& W, float* y) {
  return kernels::MatMulJob::Bf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                                  static_cast<size_t>(W.rows), y);
}

}  // namespace k3::model
