// How the step kernels cut their work over the pool: loops over tasks (heads, sequences, channel
// blocks) and over rows (element-wise and row-wise kernels, whose results do not depend on the cut).
// Used inside src/kernels only; src/model calls the kernels that use them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "src/base/thread_pool.h"

namespace k3::kernels {

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

}  // namespace k3::kernels
