// GLU MLP and the routed experts (spec §2.2, §2.5 step 2).
#include "src/model/mlp.h"

#include <algorithm>

namespace k3::model {
namespace {

// y [M, rows] = x [M, cols] @ W^T as a matmul job (MXFP4 or bf16 expert matrix).
kernels::MatMulJob ExpertJob(const float* x, int64_t M, const ExpertMatrix& W, float* y) {
  if (W.packed != nullptr) {
    return kernels::MatMulJob::Mxfp4(x, static_cast<size_t>(M), static_cast<size_t>(W.cols), W.packed,
                                     W.scales, static_cast<size_t>(W.rows), y);
  }
  return kernels::MatMulJob::Bf16(x, static_cast<size_t>(M), static_cast<size_t>(W.cols), W.bf16_data,
                                  static_cast<size_t>(W.rows), y);
}

}  // namespace

kernels::Glu GluOf(const io::ModelConfig& cfg) {
  return {cfg.activation == io::Activation::kSitu, cfg.situ_beta, cfg.situ_linear_beta};
}

void MlpForward(const LayerStep& step, const MlpWeights& w, const float* x, float* out) {
  kernels::StepEnv& env = step.env;
  const int64_t T = step.T, I = w.gate.rows;
  kernels::ScratchArena::Frame frame(env.arena);
  float* gate = env.arena.Take<float>(T * I);  // [T, I]
  float* up = env.arena.Take<float>(T * I);    // [T, I]
  const kernels::MatMulJob gate_up[] = {LinearJob(x, T, w.gate, gate), LinearJob(x, T, w.up, up)};
  kernels::Linears(env, gate_up, 2);
  kernels::GluRows(env, GluOf(step.cfg), gate, up, T, I, /*round_inputs=*/false);
  kernels::RowParallelLinear(env, LinearJob(gate, T, w.down, out));
}

void ExpertsForward(const LayerStep& step, const std::vector<ExpertWeights>& experts,
                    const int32_t* row_begin, const float* x, float* out, const BesideExperts& beside) {
  kernels::StepEnv& env = step.env;
  const int64_t E = static_cast<int64_t>(experts.size());
  const int64_t R = row_begin[E];
  const int64_t Lw = step.cfg.expert_io_dim();
  int64_t I = 0;  // this rank's part of the expert width (the same for every expert it holds)
  for (const ExpertWeights& e : experts) I = std::max(I, e.gate.rows);
  // The rows of experts this rank does not hold stay zero (their sums come from other ranks); the down
  // projections below write every other row.
  for (int64_t e = 0; e < E; ++e) {
    if (I == 0 || experts[e].down.rows == 0)
      std::fill(out + row_begin[e] * Lw, out + row_begin[e + 1] * Lw, 0.0f);
  }
  const bool any_rows = R > 0 && I > 0;
  kernels::ScratchArena::Frame frame(env.arena);
  float* gate = any_rows ? env.arena.Take<float>(R * I) : nullptr;  // [R, I]
  float* up = any_rows ? env.arena.Take<float>(R * I) : nullptr;    // [R, I]
  kernels::MatMulJob* jobs = env.arena.Take<kernels::MatMulJob>(2 * E + beside.num_first + beside.num_second);
  size_t num_jobs = 0;
  for (int64_t e = 0; any_rows && e < E; ++e) {
    const int64_t M = row_begin[e + 1] - row_begin[e];
    if (M == 0 || experts[e].gate.rows == 0) continue;
    const float* xe = x + row_begin[e] * Lw;
    jobs[num_jobs++] = ExpertJob(xe, M, experts[e].gate, gate + row_begin[e] * I);
    jobs[num_jobs++] = ExpertJob(xe, M, experts[e].up, up + row_begin[e] * I);
  }
  for (size_t j = 0; j < beside.num_first; ++j) jobs[num_jobs++] = beside.first[j];
  if (num_jobs > 0) kernels::MatMulGroup(env, jobs, num_jobs);
  if (any_rows) kernels::GluRows(env, GluOf(step.cfg), gate, up, R, I, /*round_inputs=*/true);
  if (beside.between) beside.between();
  num_jobs = 0;
  for (int64_t e = 0; any_rows && e < E; ++e) {
    const int64_t M = row_begin[e + 1] - row_begin[e];
    if (M > 0 && experts[e].down.rows > 0)
      jobs[num_jobs++] = ExpertJob(gate + row_begin[e] * I, M, experts[e].down, out + row_begin[e] * Lw);
  }
  for (size_t j = 0; j < beside.num_second; ++j) jobs[num_jobs++] = beside.second[j];
  if (num_jobs > 0) kernels::MatMulGroup(env, jobs, num_jobs);
}

}  // namespace k3::model
