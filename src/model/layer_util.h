// Helpers shared by the layers of src/model: the bf16 "nn.Linear", growable scratch buffers, a parallel
// loop that tolerates a null pool, and the description of one sequence's rows inside a batch.
#pragma once

#include <algorithm>
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

// fn(begin, end) over the rows [0, rows) of row_elements values each, cut into pieces of about
// kElementsPerPiece values that run on the pool (inline, as one piece, without a pool or when the work is
// too small to pay for a fork-join: a decode step's rows). For element-wise and row-wise kernels, whose
// results do not depend on where the rows are cut: prefill spends a fifth of its time in such loops when
// they run on one thread.
inline constexpr int64_t kElementsPerPiece = 1 << 15;
inline void ParallelRows(ThreadPool* pool, int64_t rows, int64_t row_elements,
                         const std::function<void(int64_t, int64_t)>& fn) {
  if (rows <= 0) return;
  const int64_t pieces = std::min(rows, rows * row_elements / kElementsPerPiece);
  if (pool == nullptr || pool->num_threads() == 1 || pieces <= 1) {
    fn(0, rows);
    return;
  }
  const int64_t rows_per_piece = (rows + pieces - 1) / pieces;
  const int64_t num_pieces = (rows + rows_per_piece - 1) / rows_per_piece;
  pool->ParallelFor(static_cast<size_t>(num_pieces), [&](size_t piece, size_t /*worker*/) {
    const int64_t begin = static_cast<int64_t>(piece) * rows_per_piece;
    fn(begin, std::min(rows, begin + rows_per_piece));
  });
}

// RoundToBf16 of y [rows, row_elements] on the pool (ParallelRows).
inline void RoundRowsToBf16(float* y, int64_t rows, int64_t row_elements, ThreadPool* pool) {
  ParallelRows(pool, rows, row_elements, [&](int64_t begin, int64_t end) {
    kernels::RoundToBf16(y + begin * row_elements, static_cast<size_t>((end - begin) * row_elements));
  });
}

// y [T, rows(W)] = bf16(x [T, cols(W)] @ W^T): a bf16 GEMM as the reference's nn.Linear (spec §2.0).
inline void Linear(const float* x, int64_t T, const Bf16Matrix& W, float* y, ThreadPool* pool) {
  kernels::MatMulBf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                      static_cast<size_t>(W.rows), y, pool);
  RoundRowsToBf16(y, T, W.rows, pool);
}

// Linear for a row-parallel W (each rank holds a slice of W's columns and of x's): the partial products
// are summed over the ranks before the bf16 rounding, as one process rounds the whole product.
inline void RowParallelLinear(const float* x, int64_t T, const Bf16Matrix& W, float* y, ThreadPool* pool,
                              Collectives* collectives) {
  kernels::MatMulBf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                      static_cast<size_t>(W.rows), y, pool);
  if (collectives != nullptr) collectives->AllReduceSum(y, T * W.rows);
  RoundRowsToBf16(y, T, W.rows, pool);
}

// The same product as a job of a kernels::MatMulGroup (the caller rounds y to bf16 afterwards).
inline kernels::MatMulJob LinearJob(const float* x, int64_t T, const Bf16Matrix& W, float* y) {
  return kernels::MatMulJob::Bf16(x, static_cast<size_t>(T), static_cast<size_t>(W.cols), W.data,
                                  static_cast<size_t>(W.rows), y);
}

// Several Linear products under one fork-join (kernels::MatMulGroup), each y rounded as Linear rounds it.
inline void Linears(const kernels::MatMulJob* jobs, size_t num_jobs, ThreadPool* pool) {
  kernels::MatMulGroup(jobs, num_jobs, pool);
  for (size_t j = 0; j < num_jobs; ++j) {
    RoundRowsToBf16(jobs[j].y, static_cast<int64_t>(jobs[j].M), static_cast<int64_t>(jobs[j].N), pool);
  }
}

inline size_t NumWorkers(ThreadPool* pool) { return pool == nullptr ? 1 : pool->num_threads(); }

}  // namespace k3::model
