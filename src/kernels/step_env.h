// StepEnv: what every kernel of a forward step runs in, besides its operands: the thread pool that
// splits its work, the scratch arena its working memory comes from, the collectives of a model split
// over ranks, and the numerics mode. src/model builds one per model and hands it to every layer; a
// device backend replaces the kernels and this context, never the model code (design.md "Layers").
//
//   kernels::StepEnv env{.pool = &pool};            // one process, exact numerics
//   env.arena.Reset();                              // at the start of a step
//   kernels::ScratchArena::Frame frame(env.arena);  // a layer's working memory, released at its end
//   float* y = env.arena.Take<float>(T * N);        // [T, N]
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/base/thread_pool.h"
#include "src/kernels/scratch_arena.h"

namespace k3::kernels {

// How the kernels may compute (issue 43): kExact keeps the reference's fp32-activation paths bit for bit
// (the goldens test it); kFast may use lower-precision activations where the tolerance allows. Nothing
// branches on it yet.
enum class NumericsMode : uint8_t { kExact, kFast };

// The seams where the ranks of a model split over processes meet (the model implements it over its
// communicator). In one process there is none (StepEnv::collectives is null) or it is not sharded().
class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual bool sharded() const = 0;
  // x [n] = sum over ranks of x (fp32, the same order on every rank).
  virtual void AllReduceSum(float* x, int64_t n) = 0;
};

struct StepEnv {
  ThreadPool* pool = nullptr;          // null: everything on the calling thread
  Collectives* collectives = nullptr;  // null: one process
  NumericsMode numerics = NumericsMode::kExact;
  ScratchArena arena;  // working memory of the step's kernels

  // Threads a parallel loop may use (worker indices are below this).
  size_t workers() const { return pool == nullptr ? 1 : pool->num_threads(); }
  bool sharded() const { return collectives != nullptr && collectives->sharded(); }
};

}  // namespace k3::kernels
