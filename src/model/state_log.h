// StateOpLog: rank 0's record of what happened to its sequence states since the last step plan, so the
// other ranks of a sharded model can do the same to their shards (step_plan.h).
//
// Every ModelSequenceState made with a log gets a slot id from it; creating, cloning and destroying
// the state, copying KDA states into or out of a prefix snapshot and copy-on-write block copies are
// recorded as StateOps. Drain() hands them to the next plan in the order they happened. Slot ids are
// reused after Free (the free comes first in the op order, so a worker never confuses two states).
// Thread-safe (states may die on another thread after the engine stops).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "src/model/step_plan.h"

namespace k3::model {

// Live slots one log can name at once (an engine: max_num_seqs sequences + at most 4096 snapshots).
inline constexpr int32_t kSlotsPerLog = 1 << 16;

class StateOpLog {
 public:
  // Each log names its slots from its own range of kSlotsPerLog ids (one of kMaxSlotId / kSlotsPerLog,
  // taken in turn), so several logs (two engines in a test, an engine and Sequences) can drive one model.
  StateOpLog();
  // A new slot holding an empty state (standalone, its MLA rows in `dtype`; a paged state takes the
  // dtype of its plan items instead).
  int32_t New(CacheDtype dtype = CacheDtype::kBf16);
  // A new slot holding a copy of `source` (returns it).
  int32_t Clone(int32_t source);
  // A new slot holding only `source`'s KDA state (a prefix snapshot); same op as Clone on the wire.
  int32_t Snapshot(int32_t source) { return Clone(source); }
  void CopyKda(int32_t source, int32_t target);
  void Free(int32_t slot);
  void CopyBlock(int32_t source, int32_t target);
  // Frees the memory of every paged block (only when no paged slot lives: the engine is asleep).
  void ReleaseBlocks();

  std::vector<StateOp> Drain();

 private:
  int32_t Allocate();  // mu_ held

  std::mutex mu_;
  std::vector<StateOp> ops_;
  std::vector<int32_t> free_ids_;
  int32_t next_id_;
  int32_t end_id_;
};

}  // namespace k3::model
