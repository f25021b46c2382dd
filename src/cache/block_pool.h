// BlockPool: the ids of a fixed set of MLA latent cache blocks and their reference counts.
//
// Block b holds [num_mla_layers, block_tokens, R + Rp] floats in the model's memory (state_slots.h);
// this pool only decides which ids are free and who refers to each.
// References come from sequence block tables (`seq` refs: the blocks in use) and from prefix-cache
// snapshots (`cache` refs: reclaimable by evicting the snapshot). A block returns to the free list when
// both counts reach zero; it may be written in place only while its total count is 1.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace k3::cache {

class BlockPool {
 public:
  explicit BlockPool(int64_t num_blocks);

  int64_t num_blocks() const { return static_cast<int64_t>(seq_refs_.size()); }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  // Blocks referenced by at least one sequence.
  int64_t num_in_use_by_sequences() const { return in_use_by_sequences_; }

  // A free block with one sequence reference, or nullopt when none is free.
  std::optional<int32_t> Allocate();
  int32_t total_refs(int32_t id) const { return seq_refs_[id] + cache_refs_[id]; }

  void RefSequence(int32_t id);
  void UnrefSequence(int32_t id);
  void RefCache(int32_t id);
  void UnrefCache(int32_t id);

 private:
  void MaybeFree(int32_t id);

  std::vector<int32_t> seq_refs_;
  std::vector<int32_t> cache_refs_;
  std::vector<int32_t> free_;  // stack: the most recently freed block is reused first
  int64_t in_use_by_sequences_ = 0;
};

}  // namespace k3::cache
