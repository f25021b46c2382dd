// The per-sequence steps of a KDA layer (spec §2.3) over a step's batch, cut into pool tasks: the short
// causal conv (tasks over streams and channel blocks), the gates (pieces of rows) and the delta rule
// (a task per sequence and head). The projections around them are matmuls (step_ops.h).
//
// Shapes: T rows in the batch, H heads of K = V values, P = H * K, W conv taps.
#pragma once

#include <cstdint>
#include <span>

#include "src/kernels/kda_core.h"
#include "src/kernels/step_env.h"

namespace k3::kernels {

// One sequence's new rows in the batch and its state of the layer.
struct KdaSequence {
  int64_t row_begin = 0;       // first row in the batch
  int64_t rows = 0;            // new tokens
  float* state = nullptr;      // [H, K, V] the recurrent state, advanced in place
  float* conv_tail = nullptr;  // [3, W-1, P] the q, k, v raw rows of the last W-1 tokens
};

// The three conv streams of a layer: q, k, v.
struct KdaConvStreams {
  const float* raw[3];   // [T, P] pre-conv projections
  const float* taps[3];  // [P, W] depthwise taps (tap W-1 = the current token)
  float* out[3];         // [T, P] bf16(silu(conv))
};
// Short causal conv + SiLU of every sequence's rows, tails updated in place.
void KdaShortConv(StepEnv& env, const KdaConvStreams& streams, int64_t W, int64_t P,
                  std::span<const KdaSequence> sequences);

// The gates, in place: g [T, H*K] (f_b outputs) -> log decay (KdaDecayGate of layer_ops.h), beta [T, H]
// (b_proj outputs) -> sigmoid(beta).
struct KdaGateParams {
  const float* dt_bias;  // [P]
  const float* a_exp;    // [H]
  bool has_lower_bound;
  float lower_bound;
};
void KdaGates(StepEnv& env, const KdaGateParams& params, int64_t T, int64_t H, int64_t K, float* g,
              float* beta);

// The delta rule per (sequence, head) on the conv outputs and gates, o [T, P] out: q and k l2-normalised
// per head (q also scaled by 1/sqrt(K)), the recurrence (or the chunked form for sequences with more than
// one row when asked), each head's output rounded to bf16.
struct KdaHeadInputs {
  const float* q;     // [T, P]
  const float* k;     // [T, P]
  const float* v;     // [T, P]
  const float* g;     // [T, P] log decay
  const float* beta;  // [T, H]
};
void KdaDeltaRule(StepEnv& env, const KdaHeadInputs& in, int64_t H, int64_t K, KdaPrefillForm form,
                  std::span<const KdaSequence> sequences, float* o);

}  // namespace k3::kernels
