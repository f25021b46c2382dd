// StateSlots: the per-sequence states a model owns, by slot id, and the memory of the paged MLA blocks
// its plans name (step_plan.h). Every rank of a sharded model keeps one (its own heads' KDA states, the
// replicated MLA blocks); in one process it is the only copy.
//
//   StateSlots slots(model.state_config());
//   for (const StateOp& op : plan.ops) K3_RETURN_IF_ERROR(slots.Apply(op));
//   for (const StepItem& item : plan.items) {
//     K3_ASSIGN_OR_RETURN(ModelSequenceState* state, slots.Prepare(item));   // position + block table set
//     ...
//   }
//
// Slot ids and block ids are chosen by the plan's author (the engine's KV cache); this class checks
// them and never aborts on what a plan says: a missing or reused slot, an unknown or out-of-range block,
// a position that disagrees, a token outside the vocabulary are DataLoss naming the slot. A block's
// memory, [num_mla_layers, block_tokens, R + Rp] values of the plan's cache dtype (bf16 or fp32; every
// block has the size and dtype of the latest paged item), is allocated the first time a plan names it
// and kept for reuse (block ids are recycled by the cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "src/base/status.h"
#include "src/io/model_config.h"
#include "src/model/sequence_state.h"
#include "src/model/step_plan.h"

namespace k3::model {

class StateSlots {
 public:
  // cfg: what one state holds (Model::state_config()).
  explicit StateSlots(const io::ModelConfig& cfg) : cfg_(cfg) {}

  Status Apply(const StateOp& op);
  // The state of `item`'s slot with its position and (paged) block table set from the item; checks
  // item.tokens against the vocabulary.
  Result<ModelSequenceState*> Prepare(const StepItem& item);

  int64_t num_slots() const { return static_cast<int64_t>(slots_.size()); }

 private:
  Status Vacant(int32_t slot) const;
  Result<ModelSequenceState*> Find(int32_t slot);
  Result<std::byte*> Block(int32_t id);

  io::ModelConfig cfg_;
  std::unordered_map<int32_t, std::unique_ptr<ModelSequenceState>> slots_;
  std::vector<std::unique_ptr<std::byte[]>> blocks_;  // by block id; null until first named
  int64_t block_bytes_ = 0;                           // 0 until a paged item sets the block size
  CacheDtype block_dtype_ = CacheDtype::kBf16;
};

}  // namespace k3::model
