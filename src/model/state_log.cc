// StateOpLog: slot ids and the op record (state_log.h).
#include "src/model/state_log.h"

#include <atomic>

#include "src/base/check.h"

namespace k3::model {

StateOpLog::StateOpLog() {
  static std::atomic<uint32_t> next_range{0};
  const auto ranges = static_cast<uint32_t>(kMaxSlotId / kSlotsPerLog);
  next_id_ = static_cast<int32_t>(next_range.fetch_add(1) % ranges) * kSlotsPerLog;
  end_id_ = next_id_ + kSlotsPerLog;
}

int32_t StateOpLog::Allocate() {
  if (!free_ids_.empty()) {
    const int32_t id = free_ids_.back();
    free_ids_.pop_back();
    return id;
  }
  K3_CHECK(next_id_ < end_id_);  // the engine caps max_num_seqs well below kSlotsPerLog
  return next_id_++;
}

int32_t StateOpLog::New(CacheDtype dtype) {
  std::lock_guard<std::mutex> lock(mu_);
  const int32_t id = Allocate();
  ops_.push_back({StateOpKind::kNew, id, static_cast<int32_t>(dtype)});
  return id;
}

int32_t StateOpLog::Clone(int32_t source) {
  std::lock_guard<std::mutex> lock(mu_);
  const int32_t id = Allocate();
  ops_.push_back({StateOpKind::kClone, source, id});
  return id;
}

void StateOpLog::CopyKda(int32_t source, int32_t target) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.push_back({StateOpKind::kCopyKda, source, target});
}

void StateOpLog::Free(int32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.push_back({StateOpKind::kFree, slot, 0});
  free_ids_.push_back(slot);
}

void StateOpLog::CopyBlock(int32_t source, int32_t target) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.push_back({StateOpKind::kCopyBlock, source, target});
}

void StateOpLog::ReleaseBlocks() {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.push_back({StateOpKind::kReleaseBlocks, 0, 0});
}

std::vector<StateOp> StateOpLog::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StateOp> out;
  out.swap(ops_);
  return out;
}

}  // namespace k3::model
