// PagedSequence: the engine's handle on one model state slot (model.h, step_plan.h): the slot id, the
// tokens processed and the block table of its paged MLA cache. It holds no state memory: the model owns
// the slot and the blocks' floats; this records what happens to the slot in the StateOpLog the next
// StepPlan carries (made: New, destroyed: Free, forked: Clone) and describes the sequence in a plan's
// batch (ToStepItem).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "src/model/state_log.h"
#include "src/model/step_plan.h"

namespace k3::cache {

class PagedSequence {
 public:
  PagedSequence(std::shared_ptr<model::StateOpLog> log, int64_t block_tokens,
                model::CacheDtype cache_dtype = model::CacheDtype::kBf16);
  ~PagedSequence();
  PagedSequence(const PagedSequence&) = delete;
  PagedSequence& operator=(const PagedSequence&) = delete;

  int32_t slot() const { return slot_; }
  model::StateOpLog* log() const { return log_.get(); }
  int64_t block_tokens() const { return block_tokens_; }
  model::CacheDtype cache_dtype() const { return cache_dtype_; }

  // Tokens processed (the next token's position).
  int64_t num_tokens() const { return num_tokens_; }
  // After an executed step: `n` more tokens processed.
  void Advance(int64_t n) { num_tokens_ += n; }
  // Restoring a prefix snapshot: the table must cover n tokens.
  void SetNumTokens(int64_t n);

  int64_t num_blocks() const { return static_cast<int64_t>(block_ids_.size()); }
  int32_t block_id(int64_t index) const { return block_ids_[index]; }
  const std::vector<int32_t>& block_ids() const { return block_ids_; }
  void AppendBlock(int32_t id) { block_ids_.push_back(id); }
  // Copy-on-write: table entry `index` now names `id` (the cache recorded the copy).
  void ReplaceBlock(int64_t index, int32_t id);
  // Empties the table and the position; returns the ids that were in it.
  std::vector<int32_t> ReleaseBlocks();

  // A new slot with a copy of this one's state, sharing the block table (the cache counts references).
  std::unique_ptr<PagedSequence> Fork() const;

  // This sequence's entry in a StepPlan batch: its next `tokens` from its position.
  model::StepItem ToStepItem(std::span<const int32_t> tokens, bool all_logits) const;

 private:
  PagedSequence(std::shared_ptr<model::StateOpLog> log, int64_t block_tokens, model::CacheDtype cache_dtype,
                int32_t slot);

  std::shared_ptr<model::StateOpLog> log_;
  int64_t block_tokens_;
  model::CacheDtype cache_dtype_;
  int32_t slot_;
  int64_t num_tokens_ = 0;
  std::vector<int32_t> block_ids_;
};

}  // namespace k3::cache
