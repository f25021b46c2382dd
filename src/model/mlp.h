// GLU MLP (spec §2.2): out = bf16(down(act(bf16(gate x)), bf16(up x))) with act = SiTU (K3) or SiLU
// (Kimi Linear). Used by the dense layers, the shared experts, and (with expert matrices) routed experts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "src/io/model_config.h"
#include "src/kernels/ops.h"
#include "src/kernels/step_ops.h"
#include "src/model/layer_util.h"
#include "src/model/weights.h"

namespace k3::model {

// The config's GLU activation for the kernels.
kernels::Glu GluOf(const io::ModelConfig& cfg);

// x: [T, D] -> out: [T, D]. Sharded: the rank's slice of I; down is row-parallel.
void MlpForward(const LayerStep& step, const MlpWeights& w, const float* x, float* out);

// The selected routed experts of a MoE layer on their tokens, all under one fork-join per matrix stage
// (gate and up of every expert, then every down): x: [R, Lw] with expert e's rows at
// [row_begin[e], row_begin[e + 1]) -> out: [R, Lw] in the same rows (MXFP4 or bf16 weights; fp32
// outputs, which the caller rounds to bf16 once the ranks' parts are summed). Each row equals that expert
// applied to the row alone. An expert this rank holds no part of (rows == 0: another rank's in EP mode,
// or an empty slice of I in TP mode) leaves zeros in its rows.
//
// `beside`: products of the layer that do not depend on the experts (the shared experts) and run in the
// experts' two fork-joins: `first` beside every gate and up, then `between` (which may read what `first`
// wrote), then `second` beside every down. MatMulGroup overlaps their memory-bound bf16 streams with the
// compute-bound MXFP4 decode of the experts (ops.h, "Overlap"); their results are what they would be alone.
struct BesideExperts {
  const kernels::MatMulJob* first = nullptr;
  size_t num_first = 0;
  std::function<void()> between;
  const kernels::MatMulJob* second = nullptr;
  size_t num_second = 0;
};
void ExpertsForward(const LayerStep& step, const std::vector<ExpertWeights>& experts,
                    const int32_t* row_begin, const float* x, float* out, const BesideExperts& beside = {});

}  // namespace k3::model
