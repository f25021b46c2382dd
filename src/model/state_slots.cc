// StateSlots: slot operations, item preparation and block memory (state_slots.h).
#include "src/model/state_slots.h"

#include <algorithm>
#include <cstring>

namespace k3::model {

Status StateSlots::Apply(const StateOp& op) {
  switch (op.kind) {
    case StateOpKind::kNew:
      K3_RETURN_IF_ERROR(Vacant(op.a));
      if (op.b != static_cast<int32_t>(CacheDtype::kBf16) && op.b != static_cast<int32_t>(CacheDtype::kF32))
        return DataLoss("step plan makes slot {} with cache dtype {} (0 bf16, 1 fp32)", op.a, op.b);
      slots_[op.a] = std::make_unique<ModelSequenceState>(cfg_, static_cast<CacheDtype>(op.b));
      return OkStatus();
    case StateOpKind::kClone: {
      K3_ASSIGN_OR_RETURN(ModelSequenceState * source, Find(op.a));
      K3_RETURN_IF_ERROR(Vacant(op.b));
      slots_[op.b] = source->Clone();
      return OkStatus();
    }
    case StateOpKind::kCopyKda: {
      K3_ASSIGN_OR_RETURN(ModelSequenceState * source, Find(op.a));
      K3_ASSIGN_OR_RETURN(ModelSequenceState * target, Find(op.b));
      for (int64_t i = 0; i < source->num_kda_layers(); ++i) target->kda(i) = source->kda(i);
      return OkStatus();
    }
    case StateOpKind::kFree:
      if (slots_.erase(op.a) == 0) return DataLoss("step plan frees slot {}, which does not exist", op.a);
      return OkStatus();
    case StateOpKind::kCopyBlock: {
      if (op.a < 0 || op.a >= static_cast<int32_t>(blocks_.size()) || blocks_[op.a] == nullptr)
        return DataLoss("step plan copies block {}, which was never written", op.a);
      K3_ASSIGN_OR_RETURN(std::byte * target, Block(op.b));
      std::memcpy(target, blocks_[op.a].get(), static_cast<size_t>(block_bytes_));
      return OkStatus();
    }
    case StateOpKind::kReleaseBlocks:
      for (const auto& [slot, state] : slots_) {
        if (state->paged())
          return DataLoss("step plan releases the block memory while slot {} uses blocks", slot);
      }
      blocks_.clear();
      blocks_.shrink_to_fit();
      return OkStatus();
  }
  return DataLoss("step plan: unknown state op");
}

Result<ModelSequenceState*> StateSlots::Prepare(const StepItem& item) {
  K3_ASSIGN_OR_RETURN(ModelSequenceState * state, Find(item.slot));
  if (item.tokens.empty()) return DataLoss("step plan: slot {} has no new tokens", item.slot);
  for (int32_t id : item.tokens) {
    if (id < 0 || id >= cfg_.vocab_size)
      return DataLoss("step plan: token id {} is outside the vocabulary [0, {})", id, cfg_.vocab_size);
  }
  const int64_t end = item.start_pos + static_cast<int64_t>(item.tokens.size());
  if (item.block_tokens == 0) {
    if (state->paged() || state->num_tokens() != item.start_pos) {
      return DataLoss("step plan: slot {} is at position {} here but {} in the plan", item.slot,
                      state->num_tokens(), item.start_pos);
    }
    return state;
  }
  // Everything is checked before the state changes, so a refused item leaves it as it was.
  if (!state->paged() && (state->num_tokens() != 0 || state->num_blocks() != 0))
    return DataLoss("step plan: slot {} became paged after it was written", item.slot);
  if (state->paged() && state->block_tokens() != item.block_tokens)
    return DataLoss("step plan: slot {} has blocks of {} tokens, not {}", item.slot, state->block_tokens(),
                    item.block_tokens);
  if (state->paged() && state->cache_dtype() != item.cache_dtype)
    return DataLoss("step plan: slot {} has {} blocks, not {}", item.slot,
                    CacheDtypeName(state->cache_dtype()), CacheDtypeName(item.cache_dtype));
  if (item.block_tokens > kMaxBlockTokens)
    return DataLoss("step plan: blocks of {} tokens (at most {})", item.block_tokens, kMaxBlockTokens);
  if (item.block_tokens < 0 || static_cast<int64_t>(item.blocks.size()) * item.block_tokens < end)
    return DataLoss("step plan: slot {} has {} blocks for {} tokens", item.slot, item.blocks.size(), end);
  const int64_t bytes =
      std::max<int64_t>(ModelSequenceState::MlaBlockBytes(cfg_, item.block_tokens, item.cache_dtype), 1);
  if (block_bytes_ != 0 && (block_bytes_ != bytes || block_dtype_ != item.cache_dtype)) {
    // A new engine with another block size: allowed once no slot refers to the old blocks.
    for (const auto& [id, other] : slots_) {
      if (other->paged() && other.get() != state)
        return DataLoss("step plan: block size or dtype changed while slot {} still uses the old blocks", id);
    }
    blocks_.clear();
    block_bytes_ = 0;
  }
  for (int32_t id : item.blocks) {
    if (id < 0 || id >= kMaxBlockId) return DataLoss("step plan: block id {} is out of range", id);
  }
  block_bytes_ = bytes;
  block_dtype_ = item.cache_dtype;
  if (!state->paged()) state->SetExternalMlaBlocks(item.block_tokens, item.cache_dtype);
  (void)state->ReleaseBlocks();
  for (int32_t id : item.blocks) {
    K3_ASSIGN_OR_RETURN(std::byte * block, Block(id));
    state->AppendBlock(id, block);
  }
  state->SetNumTokens(item.start_pos);
  return state;
}

Status StateSlots::Vacant(int32_t slot) const {
  if (slot < 0 || slot >= kMaxSlotId) return DataLoss("step plan: slot id {} is out of range", slot);
  if (slots_.count(slot) != 0) return DataLoss("step plan reuses slot {} before freeing it", slot);
  return OkStatus();
}

Result<ModelSequenceState*> StateSlots::Find(int32_t slot) {
  auto it = slots_.find(slot);
  if (it == slots_.end()) return DataLoss("step plan names slot {}, which does not exist", slot);
  return it->second.get();
}

Result<std::byte*> StateSlots::Block(int32_t id) {
  if (id < 0 || id >= kMaxBlockId) return DataLoss("step plan: block id {} is out of range", id);
  if (block_bytes_ == 0) return DataLoss("step plan names block {} before any block size", id);
  if (id >= static_cast<int32_t>(blocks_.size())) blocks_.resize(static_cast<size_t>(id) + 1);
  auto& block = blocks_[id];
  // Left uninitialised: a row is read only after the forward that wrote it (or a copy of one).
  if (block == nullptr)
    block = std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(block_bytes_));
  return block.get();
}

}  // namespace k3::model
