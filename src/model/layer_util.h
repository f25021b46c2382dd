// Helpers shared by the layers of src/model: the bf16 "nn.Linear", growable scratch buffers, a parallel
// loop that tolerates a null pool, and the description of one sequence's rows inside a batch.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "src/base/thread_pool.h"
#include "src/kernels/ops.h"
#include "src/model/collectives.h"
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

// Returns buffer.data() with at least n elements (grows, never shrinks: reused across layers and steps).
template <typename Tp>
Tp* Grow(std::vector<Tp>& buffer, size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// y [T, rows(W)] = bf16(x [T, cols(W)] @ W^T): a bf16 GEMM as the reference's nn.Linear (spec §2.0).
inline void Linear(const float* x, int64_t T, const Bf16Matrix& W, float* y, ThreadPool* pool) {
  kernels::MatMulBf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                      static_cast<size_t>(W.rows), y, pool);
  kernels::RoundToBf16(y, static_cast<size_t>(T * W.rows));
}

// Linear for a row-parallel W (each rank holds a slice of W's columns and of x's): the partial products
// are summed over the ranks before the bf16 rounding, as one process rounds the whole product.
inline void RowParallelLinear(const float* x, int64_t T, const Bf16Matrix& W, float* y, ThreadPool* pool,
                              Collectives* collectives) {
  kernels::MatMulBf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                      static_cast<size_t>(W.rows), y, pool);
  if (collectives != nullptr) collectives->AllReduceSum(y, T * W.rows);
  kernels::RoundToBf16(y, static_cast<size_t>(T * W.rows));
}

// The same product as a job of a kernels::MatMulGroup (the caller rounds y to bf16 afterwards).
inline kernels::MatMulJob LinearJob(const float* x, int64_t T, const Bf16Matrix& W, float* y) {
  return kernels::MatMulJob::Bf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                                  static_cast<size_t>(W.rows), y);
}

// Several Linear products under one fork-join (kernels::MatMulGroup), each y rounded as Linear rounds it.
inline void Linears(const kernels::MatMulJob* jobs, size_t num_jobs, ThreadPool* pool) {
  kernels::MatMulGroup(jobs, num_jobs, pool);
  for (size_t j = 0; j < num_jobs; ++j) kernels::RoundToBf16(jobs[j].y, jobs[j].M * jobs[j].N);
}

// fn(task, worker) for task in [0, n): on the pool when there is one and the loop is worth a fork-join
// (n * work_per_task >= kMinParallelWork multiply-adds), else inline (worker 0).
inline constexpr int64_t kMinParallelWork = 1 << 16;
inline void ParallelTasks(ThreadPool* pool, int64_t n, int64_t work_per_task,
                          const std::function<void(size_t, size_t)>& fn) {
  if (pool == nullptr || n <= 1 || n * work_per_task < kMinParallelWork) {
    for (int64_t i = 0; i < n; ++i) fn(static_cast<size_t>(i), 0);
    return;
  }
  pool->ParallelFor(static_cast<size_t>(n), fn);
}

inline size_t NumWorkers(ThreadPool* pool) { return pool == nullptr ? 1 : pool->num_threads(); }

}  // namespace k3::model
