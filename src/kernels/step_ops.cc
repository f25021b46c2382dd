// Row-wise layer steps and rounded products over a step's activations (step_ops.h).
#include "src/kernels/step_ops.h"

#include "src/kernels/layer_ops.h"
#include "src/kernels/parallel.h"

namespace k3::kernels {

void GluValues(const Glu& glu, const float* a, const float* b, size_t n, float* out) {
  if (glu.situ) {
    SituGlu(a, b, n, glu.beta, glu.linear_beta, out);
  } else {
    SiluGlu(a, b, n, out);
  }
}

void RoundToBf16Rows(StepEnv& env, float* y, int64_t rows, int64_t width) {
  ParallelRows(env.pool, rows, width, [&](int64_t begin, int64_t end) {
    RoundToBf16(y + begin * width, static_cast<size_t>((end - begin) * width));
  });
}

void AddRoundBf16Rows(StepEnv& env, float* h, const float* a, int64_t rows, int64_t width) {
  ParallelRows(env.pool, rows, width, [&](int64_t begin, int64_t end) {
    AddRoundBf16(h + begin * width, a + begin * width, static_cast<size_t>((end - begin) * width));
  });
}

void RmsNormRows(StepEnv& env, const float* x, int64_t rows, int64_t n, const bf16* w, float eps, float* y) {
  ParallelRows(env.pool, rows, n, [&](int64_t begin, int64_t end) {
    RmsNormRows(x + begin * n, static_cast<size_t>(end - begin), n, n, w, eps, y + begin * n);
  });
}

void GatedRmsNormRows(StepEnv& env, const float* o, const float* gate, const float* w, int64_t rows,
                      int64_t n, float eps, float* y) {
  ParallelRows(env.pool, rows, n, [&](int64_t begin, int64_t end) {
    GatedRmsNormRows(o + begin * n, gate + begin * n, w, static_cast<size_t>(end - begin), n, eps,
                     y + begin * n);
  });
}

void GluRows(StepEnv& env, const Glu& glu, float* a, float* b, int64_t rows, int64_t width,
             bool round_inputs) {
  ParallelRows(env.pool, rows, width, [&](int64_t begin, int64_t end) {
    const size_t n = static_cast<size_t>((end - begin) * width);
    float* ra = a + begin * width;
    float* rb = b + begin * width;
    if (round_inputs) {
      RoundToBf16(ra, n);
      RoundToBf16(rb, n);
    }
    GluValues(glu, ra, rb, n, ra);
  });
}

void MatMulGroup(StepEnv& env, const MatMulJob* jobs, size_t num_jobs) {
  MatMulGroup(jobs, num_jobs, env.pool);
}

void Linears(StepEnv& env, const MatMulJob* jobs, size_t num_jobs) {
  MatMulGroup(jobs, num_jobs, env.pool);
  for (size_t j = 0; j < num_jobs; ++j) {
    RoundToBf16Rows(env, jobs[j].y, static_cast<int64_t>(jobs[j].M), static_cast<int64_t>(jobs[j].N));
  }
}

void RowParallelLinear(StepEnv& env, const MatMulJob& job) {
  MatMulGroup(&job, 1, env.pool);
  const int64_t M = static_cast<int64_t>(job.M), N = static_cast<int64_t>(job.N);
  if (env.collectives != nullptr) env.collectives->AllReduceSum(job.y, M * N);
  RoundToBf16Rows(env, job.y, M, N);
}

}  // namespace k3::kernels
