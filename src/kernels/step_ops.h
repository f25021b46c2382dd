// The row-wise steps of a layer over a whole step's [T, ...] activations, cut over the StepEnv's pool
// (parallel.h), and the products of a layer's inputs: groups of matmuls rounded as nn.Linear rounds, and
// the row-parallel product whose partial sums meet across ranks before the rounding (spec §2.0, shard.h).
// Each is the layer_ops.h / ops.h kernel of the same name applied piece by piece, so results do not
// depend on the pool (row-wise kernels give the same bits wherever the rows are cut).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/base/bf16.h"
#include "src/kernels/ops.h"
#include "src/kernels/step_env.h"

namespace k3::kernels {

// The GLU activation of an MLP (spec §2.2): out = bf16(act(a) * lin(b)), SiTU (K3) or SiLU (Kimi Linear).
struct Glu {
  bool situ = true;
  float beta = 0, linear_beta = 0;  // SiTU only
};
// out[i] = Glu(a[i], b[i]) for n values; out may alias a.
void GluValues(const Glu& glu, const float* a, const float* b, size_t n, float* out);

// y [rows, width] = bf16(y).
void RoundToBf16Rows(StepEnv& env, float* y, int64_t rows, int64_t width);
// h [rows, width] = bf16(h + a) (the residual add).
void AddRoundBf16Rows(StepEnv& env, float* h, const float* a, int64_t rows, int64_t width);
// y [rows, n] = RmsNorm(x [rows, n]; w) row by row; y may alias x.
void RmsNormRows(StepEnv& env, const float* x, int64_t rows, int64_t n, const bf16* w, float eps, float* y);
// y [rows, n] = GatedRmsNorm(o, gate; w) row by row (per-head norms over [T, H, V] are T*H rows of V).
void GatedRmsNormRows(StepEnv& env, const float* o, const float* gate, const float* w, int64_t rows,
                      int64_t n, float eps, float* y);
// a [rows, width] = Glu(a, b); with round_inputs, a and b are rounded to bf16 first (the outputs of
// unrounded matmuls, as nn.Linear would have rounded them).
void GluRows(StepEnv& env, const Glu& glu, float* a, float* b, int64_t rows, int64_t width,
             bool round_inputs);

// The matmul jobs under one fork-join (MatMulGroup of ops.h on the env's pool).
void MatMulGroup(StepEnv& env, const MatMulJob* jobs, size_t num_jobs);
// MatMulGroup, then each y rounded to bf16: several nn.Linear products.
void Linears(StepEnv& env, const MatMulJob* jobs, size_t num_jobs);
// One nn.Linear of a row-parallel weight (each rank holds a slice of its columns and of x's): the
// partial products are summed over the ranks before the bf16 rounding, as one process rounds the whole.
void RowParallelLinear(StepEnv& env, const MatMulJob& job);

}  // namespace k3::kernels
