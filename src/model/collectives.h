// Collectives: the forward pass's view of its tensor-parallel group, over the rank's communicator. The
// kernels call it (kernels::Collectives, through the StepEnv) at the seams of the layout (shard.h): after a
// row-parallel product (all-reduce of the partial sums before the bf16 rounding the reference does there);
// the model calls it for the vocabulary-split lm_head (gather to rank 0).
//
// In one process (no communicator) every call is a no-op, so the layers have one code path. A failed
// collective (a lost rank, a timeout) is kept in status(); later calls do nothing, the forward pass
// runs to its end on meaningless numbers and Forward returns the status.
#pragma once

#include <cstdint>
#include "src/base/status.h"
#include "src/dist/communicator.h"
#include "src/kernels/step_env.h"

namespace k3::model {

class Collectives final : public kernels::Collectives {
 public:
  explicit Collectives(dist::Communicator* comm = nullptr) : comm_(comm) {}

  bool sharded() const override { return comm_ != nullptr && comm_->world_size() > 1; }
  int rank() const { return comm_ == nullptr ? 0 : comm_->rank(); }
  int world() const { return comm_ == nullptr ? 1 : comm_->world_size(); }

  // x [n] = sum over ranks of x (fp32, same order on every rank).
  void AllReduceSum(float* x, int64_t n) override;
  // Rank 0 gets out [rows, world * cols] whose column block r is rank r's local [rows, cols]; other
  // ranks' out is untouched. `gathered`: [world, rows, cols] scratch.
  void GatherColumns(const float* local, int64_t rows, int64_t cols, float* gathered, float* out);

  const Status& status() const { return status_; }
  // Wall time spent inside collectives so far (waiting for the slowest rank included).
  double seconds() const { return seconds_; }

 private:
  dist::Communicator* comm_;
  Status status_;
  double seconds_ = 0;
};

}  // namespace k3::model
