// GLU MLP and one routed expert (spec §2.2, §2.5 step 2).
#include "src/model/mlp.h"

#include "src/kernels/ops.h"
#include "src/model/layer_util.h"

namespace k3::model {
namespace {

// y [M, rows] = bf16(x [M, cols] @ W^T) for an MXFP4 or bf16 expert matrix.
void ExpertLinear(const float* x, int64_t M, const ExpertMatrix& W, float* y, ThreadPool* pool) {
  if (W.packed != nullptr) {
    kernels::MatMulMxfp4(x, M, W.cols, W.packed, W.scales, W.rows, y, pool);
  } else {
    kernels::MatMulBf16(x, M, W.cols, W.bf16_data, W.rows, y, pool);
  }
  kernels::RoundToBf16(y, static_cast<size_t>(M * W.rows));
}

}  // namespace

void GluActivation(const io::ModelConfig& cfg, const float* a, const float* b, int64_t n, float* out) {
  if (cfg.activation == io::Activation::kSitu) {
    kernels::SituGlu(a, b, n, cfg.situ_beta, cfg.situ_linear_beta, out);
  } else {
    kernels::SiluGlu(a, b, n, out);
  }
}

void MlpForward(const io::ModelConfig& cfg, const MlpWeights& w, const float* x, int64_t T,
                MlpScratch* scratch, ThreadPool* pool, float* out) {
  const int64_t I = w.gate.rows;
  float* gate = Grow(scratch->gate, T * I);  // [T, I]
  float* up = Grow(scratch->up, T * I);      // [T, I]
  Linear(x, T, w.gate, gate, pool);
  Linear(x, T, w.up, up, pool);
  GluActivation(cfg, gate, up, T * I, gate);
  Linear(gate, T, w.down, out, pool);
}

void ExpertForward(const io::ModelConfig& cfg, const ExpertWeights& w, const float* x, int64_t M,
                   MlpScratch* scratch, ThreadPool* pool, float* out) {
  const int64_t I = w.gate.rows;
  float* gate = Grow(scratch->gate, M * I);  // [M, I]
  float* up = Grow(scratch->up, M * I);      // [M, I]
  ExpertLinear(x, M, w.gate, gate, pool);
  ExpertLinear(x, M, w.up, up, pool);
  GluActivation(cfg, gate, up, M * I, gate);
  ExpertLinear(gate, M, w.down, out, pool);
}

}  // namespace k3::model
