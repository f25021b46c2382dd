// ThreadCommunicators (thread_communicator.h).
#include "src/model/testing/thread_communicator.h"

#include <condition_variable>
#include <cstring>
#include <mutex>

namespace k3::model::testing {
namespace {

struct Shared {
  explicit Shared(int world) : posted(static_cast<size_t>(world)), sizes(static_cast<size_t>(world)) {}
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool broken = false;
  std::vector<const void*> posted;
  std::vector<size_t> sizes;
};

class ThreadCommunicator final : public dist::Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Shared> shared, int rank, int world)
      : shared_(std::move(shared)), rank_(rank), world_(world) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  Status AllReduceSum(std::span<float> data) override {
    std::vector<float> sum(data.size(), 0.0f);
    K3_RETURN_IF_ERROR(Exchange(data.data(), data.size_bytes(), [&](int r, const void* p) {
      const float* x = static_cast<const float*>(p);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
      (void)r;
    }));
    std::memcpy(data.data(), sum.data(), data.size_bytes());
    return Barrier();
  }
  Status AllGather(std::span<const float> in, std::span<float> out) override {
    return Exchange(in.data(), in.size_bytes(), [&](int r, const void* p) {
      std::memcpy(out.data() + r * in.size(), p, in.size_bytes());
    });
  }
  Status Gather(std::span<const float> in, std::span<float> out, int root) override {
    return Exchange(in.data(), in.size_bytes(), [&](int r, const void* p) {
      if (rank_ == root) std::memcpy(out.data() + r * in.size(), p, in.size_bytes());
    });
  }
  Status Broadcast(std::span<uint8_t> data, int root) override {
    std::vector<uint8_t> copy(data.size());
    K3_RETURN_IF_ERROR(Exchange(data.data(), data.size(), [&](int r, const void* p) {
      if (r == root) std::memcpy(copy.data(), p, copy.size());
    }));
    K3_RETURN_IF_ERROR(Barrier());
    std::memcpy(data.data(), copy.data(), copy.size());
    return OkStatus();
  }
  Status Barrier() override {
    return Exchange(nullptr, 0, [](int, const void*) {});
  }
  void SetTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

 private:
  // Phase 1: post, wait for all; read every rank's buffer with `read`; phase 2: wait until all have read.
  template <typename Fn>
  Status Exchange(const void* mine, size_t bytes, Fn read) {
    K3_RETURN_IF_ERROR(Arrive(mine, bytes));
    for (int r = 0; r < world_; ++r) {
      if (shared_->sizes[r] != bytes)
        return Internal("rank {} called a collective of {} bytes, rank {} of {}", r, shared_->sizes[r], rank_,
                        bytes);
      read(r, shared_->posted[r]);
    }
    return Arrive(nullptr, bytes);
  }
  Status Arrive(const void* mine, size_t bytes) {
    std::unique_lock<std::mutex> lock(shared_->mu);
    if (shared_->broken) return IoError("rank {}: the group is broken", rank_);
    if (mine != nullptr || bytes == 0) {
      shared_->posted[rank_] = mine;
      shared_->sizes[rank_] = bytes;
    }
    const uint64_t generation = shared_->generation;
    if (++shared_->arrived == world_) {
      shared_->arrived = 0;
      ++shared_->generation;
      shared_->cv.notify_all();
      return OkStatus();
    }
    if (!shared_->cv.wait_for(lock, timeout_,
                              [&] { return shared_->generation != generation || shared_->broken; }) ||
        shared_->broken) {
      shared_->broken = true;
      shared_->cv.notify_all();
      return IoError("rank {}: a peer did not join the collective within {} ms", rank_, timeout_.count());
    }
    return OkStatus();
  }

  std::shared_ptr<Shared> shared_;
  int rank_;
  int world_;
  std::chrono::milliseconds timeout_{20'000};
};

}  // namespace

std::vector<std::unique_ptr<dist::Communicator>> MakeThreadCommunicators(int world) {
  auto shared = std::make_shared<Shared>(world);
  std::vector<std::unique_ptr<dist::Communicator>> out;
  for (int r = 0; r < world; ++r) out.push_back(std::make_unique<ThreadCommunicator>(shared, r, world));
  return out;
}

}  // namespace k3::model::testing
