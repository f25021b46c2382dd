// BlockPool: allocation and reference counting of MLA cache blocks.
#include "src/cache/block_pool.h"

#include "src/base/check.h"

namespace k3::cache {

BlockPool::BlockPool(int64_t num_blocks)
    : seq_refs_(static_cast<size_t>(num_blocks), 0), cache_refs_(static_cast<size_t>(num_blocks), 0) {
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

std::optional<int32_t> BlockPool::Allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t id = free_.back();
  free_.pop_back();
  seq_refs_[id] = 1;
  ++in_use_by_sequences_;
  return id;
}

void BlockPool::RefSequence(int32_t id) {
  K3_CHECK(total_refs(id) > 0);
  if (seq_refs_[id]++ == 0) ++in_use_by_sequences_;
}

void BlockPool::UnrefSequence(int32_t id) {
  K3_CHECK(seq_refs_[id] > 0);
  if (--seq_refs_[id] == 0) --in_use_by_sequences_;
  MaybeFree(id);
}

void BlockPool::RefCache(int32_t id) {
  K3_CHECK(total_refs(id) > 0);
  ++cache_refs_[id];
}

void BlockPool::UnrefCache(int32_t id) {
  K3_CHECK(cache_refs_[id] > 0);
  --cache_refs_[id];
  MaybeFree(id);
}

void BlockPool::MaybeFree(int32_t id) {
  if (total_refs(id) == 0) free_.push_back(id);
}

}  // namespace k3::cache
