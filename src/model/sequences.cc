// Sequences: slots, positions and plans for engine-less callers (sequences.h).
#include "src/model/sequences.h"

#include "src/base/check.h"

namespace k3::model {

Sequences::~Sequences() {
  for (const auto& [slot, position] : positions_) log_.Free(slot);
  StepPlan plan;
  plan.ops = log_.Drain();
  ForwardOutput unused;
  (void)model_.Execute(plan, &unused);  // frees this object's slots (no batch, no collective)
}

int32_t Sequences::New() {
  const int32_t slot = log_.New(dtype_);
  positions_[slot] = 0;
  return slot;
}

int32_t Sequences::Clone(int32_t slot) {
  const int64_t position = positions_.at(slot);
  const int32_t copy = log_.Clone(slot);
  positions_[copy] = position;
  return copy;
}

void Sequences::Free(int32_t slot) {
  K3_CHECK(positions_.erase(slot) == 1);
  log_.Free(slot);
}

Status Sequences::Forward(std::span<const SequenceBatchItem> batch, ForwardOutput* out) {
  StepPlan plan;
  plan.ops = log_.Drain();
  plan.items.reserve(batch.size());
  for (const SequenceBatchItem& item : batch) {
    StepItem step;
    step.slot = item.slot;
    step.start_pos = positions_.at(item.slot);
    step.all_logits = item.all_logits;
    step.tokens.assign(item.tokens.begin(), item.tokens.end());
    step.embeddings = item.embeddings;
    plan.items.push_back(std::move(step));
  }
  K3_RETURN_IF_ERROR(model_.Execute(plan, out));
  for (const SequenceBatchItem& item : batch)
    positions_[item.slot] += static_cast<int64_t>(item.tokens.size());
  return OkStatus();
}

}  // namespace k3::model
