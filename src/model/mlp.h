// GLU MLP (spec §2.2): out = bf16(down(act(bf16(gate x)), bf16(up x))) with act = SiTU (K3) or SiLU
// (Kimi Linear). Used by the dense layers, the shared experts, and (with expert matrices) routed experts.
#pragma once

#include <cstdint>
#include <vector>

#include "src/base/thread_pool.h"
#include "src/io/model_config.h"
#include "src/model/weights.h"

namespace k3::model {

struct MlpScratch {
  std::vector<float> gate;  // [T, I]
  std::vector<float> up;    // [T, I]
};

// out[i] = bf16(act(a[i]) * lin(b[i])) for the config's activation; out may alias a.
void GluActivation(const io::ModelConfig& cfg, const float* a, const float* b, int64_t n, float* out);

// x: [T, D] -> out: [T, D].
void MlpForward(const io::ModelConfig& cfg, const MlpWeights& w, const float* x, int64_t T,
                MlpScratch* scratch, ThreadPool* pool, float* out);

// One routed expert on its tokens: x: [M, Lw] -> out: [M, Lw] (MXFP4 or bf16 weights, bf16 outputs).
void ExpertForward(const io::ModelConfig& cfg, const ExpertWeights& w, const float* x, int64_t M,
                   MlpScratch* scratch, ThreadPool* pool, float* out);

}  // namespace k3::model
