// Collectives: all-reduce and gather through the rank's communicator (collectives.h).
#include "src/model/collectives.h"

#include <chrono>
#include <cstring>

namespace k3::model {

void Collectives::AllReduceSum(float* x, int64_t n) {
  if (!sharded() || !status_.ok() || n == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  status_ = comm_->AllReduceSum(std::span<float>(x, static_cast<size_t>(n)));
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Collectives::GatherColumns(const float* local, int64_t rows, int64_t cols, float* gathered, float* out) {
  if (!sharded()) {
    std::memcpy(out, local, sizeof(float) * static_cast<size_t>(rows * cols));
    return;
  }
  if (!status_.ok()) return;
  const int t = world();
  const bool root = rank() == 0;
  const auto t0 = std::chrono::steady_clock::now();
  status_ = comm_->Gather(
      std::span<const float>(local, static_cast<size_t>(rows * cols)),
      root ? std::span<float>(gathered, static_cast<size_t>(t * rows * cols)) : std::span<float>(),
      /*root=*/0);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!status_.ok() || !root) return;
  // gathered [t, rows, cols] -> out [rows, t * cols]
  for (int r = 0; r < t; ++r) {
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(out + i * t * cols + r * cols, gathered + (r * rows + i) * cols,
                  sizeof(float) * static_cast<size_t>(cols));
    }
  }
}

}  // namespace k3::model
