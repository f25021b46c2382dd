// PagedSequence: slot lifetime in the op log, the block table and plan items (paged_sequence.h).
#include "src/cache/paged_sequence.h"

#include "src/base/check.h"

namespace k3::cache {

PagedSequence::PagedSequence(std::shared_ptr<model::StateOpLog> log, int64_t block_tokens,
                             model::CacheDtype cache_dtype)
    : log_(std::move(log)), block_tokens_(block_tokens), cache_dtype_(cache_dtype), slot_(log_->New()) {
  K3_CHECK(block_tokens_ > 0);
}

PagedSequence::PagedSequence(std::shared_ptr<model::StateOpLog> log, int64_t block_tokens,
                             model::CacheDtype cache_dtype, int32_t slot)
    : log_(std::move(log)), block_tokens_(block_tokens), cache_dtype_(cache_dtype), slot_(slot) {}

PagedSequence::~PagedSequence() { log_->Free(slot_); }

void PagedSequence::SetNumTokens(int64_t n) {
  K3_CHECK(n >= 0 && n <= num_blocks() * block_tokens_);
  num_tokens_ = n;
}

void PagedSequence::ReplaceBlock(int64_t index, int32_t id) {
  K3_CHECK(index >= 0 && index < num_blocks());
  block_ids_[index] = id;
}

std::vector<int32_t> PagedSequence::ReleaseBlocks() {
  std::vector<int32_t> ids = std::move(block_ids_);
  block_ids_.clear();
  num_tokens_ = 0;
  return ids;
}

std::unique_ptr<PagedSequence> PagedSequence::Fork() const {
  auto copy = std::unique_ptr<PagedSequence>(
      new PagedSequence(log_, block_tokens_, cache_dtype_, log_->Clone(slot_)));
  copy->num_tokens_ = num_tokens_;
  copy->block_ids_ = block_ids_;
  return copy;
}

model::StepItem PagedSequence::ToStepItem(std::span<const int32_t> tokens, bool all_logits) const {
  model::StepItem item;
  item.slot = slot_;
  item.start_pos = num_tokens_;
  item.all_logits = all_logits;
  item.block_tokens = static_cast<int32_t>(block_tokens_);
  item.cache_dtype = cache_dtype_;
  item.tokens.assign(tokens.begin(), tokens.end());
  item.blocks = block_ids_;
  return item;
}

}  // namespace k3::cache
