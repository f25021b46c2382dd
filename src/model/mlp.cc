// GLU MLP and one routed expert (spec §2.2, §2.5 step 2).
#include "src/model/mlp.h"

#include <algorithm>

#include "src/kernels/ops.h"
#include "src/model/layer_util.h"

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

void GluActivation(const io::ModelConfig& cfg, const float* a, const float* b, int64_t n, float* out) {
  if (cfg.activation == io::Activation::kSitu) {
    kernels::SituGlu(a, b, n, cfg.situ_beta, cfg.situ_linear_beta, out);
  } else {
    kernels::SiluGlu(a, b, n, out);
  }
}

void MlpForward(const io::ModelConfig& cfg, const MlpWeights& w, const float* x, int64_t T,
                MlpScratch* scratch, ThreadPool* pool, float* out, Collectives* collectives) {
  const int64_t I = w.gate.rows;
  float* gate = Grow(scratch->gate, T * I);  // [T, I]
  float* up = Grow(scratch->up, T * I);      // [T, I]
  const kernels::MatMulJob gate_up[] = {LinearJob(x, T, w.gate, gate), LinearJob(x, T, w.up, up)};
  Linears(gate_up, 2, pool);
  ParallelRows(pool, T, I, [&](int64_t begin, int64_t end) {
    GluActivation(cfg, gate + begin * I, up + begin * I, (end - begin) * I, gate + begin * I);
  });
  RowParallelLinear(gate, T, w.down, out, pool, collectives);
}

void ExpertsForward(const io::ModelConfig& cfg, const std::vector<ExpertWeights>& experts,
                    const int32_t* row_begin, const float* x, MlpScratch* scratch, ThreadPool* pool,
                    float* out, const BesideExperts& beside) {
  const int64_t E = static_cast<int64_t>(experts.size());
  const int64_t R = row_begin[E];
  const int64_t Lw = cfg.expert_io_dim();
  int64_t I = 0;  // this rank's part of the expert width (the same for every expert it holds)
  for (const ExpertWeights& e : experts) I = std::max(I, e.gate.rows);
  // The rows of experts this rank does not hold stay zero (their sums come from other ranks); the down
  // projections below write every other row.
  for (int64_t e = 0; e < E; ++e) {
    if (I == 0 || experts[e].down.rows == 0)
      std::fill(out + row_begin[e] * Lw, out + row_begin[e + 1] * Lw, 0.0f);
  }
  const bool any_rows = R > 0 && I > 0;
  float* gate = any_rows ? Grow(scratch->gate, R * I) : nullptr;  // [R, I]
  float* up = any_rows ? Grow(scratch->up, R * I) : nullptr;      // [R, I]
  thread_local std::vector<kernels::MatMulJob> jobs;
  jobs.clear();
  for (int64_t e = 0; any_rows && e < E; ++e) {
    const int64_t M = row_begin[e + 1] - row_begin[e];
    if (M == 0 || experts[e].gate.rows == 0) continue;
    const float* xe = x + row_begin[e] * Lw;
    jobs.push_back(ExpertJob(xe, M, experts[e].gate, gate + row_begin[e] * I));
    jobs.push_back(ExpertJob(xe, M, experts[e].up, up + row_begin[e] * I));
  }
  jobs.insert(jobs.end(), beside.first, beside.first + beside.num_first);
  if (!jobs.empty()) kernels::MatMulGroup(jobs.data(), jobs.size(), pool);
  if (any_rows) {
    ParallelRows(pool, R, I, [&](int64_t begin, int64_t end) {
      const size_t n = static_cast<size_t>((end - begin) * I);
      float* g = gate + begin * I;
      float* u = up + begin * I;
      kernels::RoundToBf16(g, n);
      kernels::RoundToBf16(u, n);
      GluActivation(cfg, g, u, static_cast<int64_t>(n), g);
    });
  }
  if (beside.between) beside.between();
  jobs.clear();
  for (int64_t e = 0; any_rows && e < E; ++e) {
    const int64_t M = row_begin[e + 1] - row_begin[e];
    if (M > 0 && experts[e].down.rows > 0)
      jobs.push_back(ExpertJob(gate + row_begin[e] * I, M, experts[e].down, out + row_begin[e] * Lw));
  }
  jobs.insert(jobs.end(), beside.second, beside.second + beside.num_second);
  if (!jobs.empty()) kernels::MatMulGroup(jobs.data(), jobs.size(), pool);
}

}  // namespace k3::model
