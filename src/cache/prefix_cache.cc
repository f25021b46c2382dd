// PrefixCache: chained block hashes, snapshot insert / restore and LRU eviction.
#include "src/cache/prefix_cache.h"

#include <algorithm>

#include "src/base/check.h"

namespace k3::cache {
namespace {

// splitmix64 finaliser: a well-mixed 64-bit step.
uint64_t Mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t HashRange(uint64_t parent, std::span<const int32_t> ids) {
  uint64_t h = Mix(parent, ids.size());
  for (int32_t id : ids) h = Mix(h, static_cast<uint32_t>(id));
  return h;
}

}  // namespace

std::vector<uint64_t> ChainedBlockHashes(std::span<const int32_t> tokens, int64_t block_tokens) {
  std::vector<uint64_t> out;
  uint64_t parent = 0x6b33ULL;
  for (int64_t b = 0; (b + 1) * block_tokens <= static_cast<int64_t>(tokens.size()); ++b) {
    parent = HashRange(parent, tokens.subspan(b * block_tokens, block_tokens));
    out.push_back(parent);
  }
  return out;
}

PrefixCache::PrefixCache(BlockPool* pool, int64_t block_tokens, int64_t max_snapshots,
                         std::shared_ptr<model::StateOpLog> log)
    : pool_(pool), log_(std::move(log)), block_tokens_(block_tokens), max_snapshots_(max_snapshots) {}

PrefixCache::~PrefixCache() {
  while (EvictOne()) {
  }
}

uint64_t PrefixCache::Key(std::span<const int32_t> tokens) const {
  const std::vector<uint64_t> chain = ChainedBlockHashes(tokens, block_tokens_);
  const int64_t full = static_cast<int64_t>(chain.size()) * block_tokens_;
  return HashRange(chain.empty() ? 0x6b33ULL : chain.back(), tokens.subspan(full));
}

bool PrefixCache::Contains(std::span<const int32_t> tokens) const {
  auto [begin, end] = by_key_.equal_range(Key(tokens));
  for (auto it = begin; it != end; ++it) {
    if (std::ranges::equal(it->second->tokens, tokens)) return true;
  }
  return false;
}

void PrefixCache::Insert(std::span<const int32_t> tokens, const PagedSequence& state,
                         std::span<const float> logits) {
  K3_CHECK(state.num_tokens() == static_cast<int64_t>(tokens.size()) && !tokens.empty());
  if (max_snapshots_ <= 0 || Contains(tokens)) return;
  while (num_snapshots() >= max_snapshots_) EvictOne();
  Snapshot snap;
  snap.key = Key(tokens);
  snap.tokens.assign(tokens.begin(), tokens.end());
  snap.slot = log_->Snapshot(state.slot());
  const int64_t blocks = (state.num_tokens() + block_tokens_ - 1) / block_tokens_;
  for (int64_t b = 0; b < blocks; ++b) {
    snap.blocks.push_back(state.block_id(b));
    pool_->RefCache(state.block_id(b));
  }
  snap.logits.assign(logits.begin(), logits.end());
  lru_.push_front(std::move(snap));
  by_key_.emplace(lru_.front().key, lru_.begin());
  ++positions_[static_cast<int64_t>(tokens.size())];
}

int64_t PrefixCache::Restore(std::span<const int32_t> tokens, PagedSequence* state,
                             std::vector<float>* logits) {
  K3_CHECK(state->num_tokens() == 0 && state->num_blocks() == 0);
  logits->clear();
  if (lru_.empty()) return 0;
  const std::vector<uint64_t> chain = ChainedBlockHashes(tokens, block_tokens_);
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (auto pos = positions_.rbegin(); pos != positions_.rend(); ++pos) {
    const int64_t p = pos->first;
    if (p > n) continue;
    const int64_t full = p / block_tokens_;
    const uint64_t key = HashRange(full == 0 ? 0x6b33ULL : chain[full - 1],
                                   tokens.subspan(full * block_tokens_, p - full * block_tokens_));
    auto [begin, end] = by_key_.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      Snapshot& snap = *it->second;
      if (!std::ranges::equal(snap.tokens, tokens.first(p))) continue;
      if (p == n && snap.logits.empty()) continue;  // the last token's logits would be missing
      log_->CopyKda(snap.slot, state->slot());
      for (int32_t id : snap.blocks) {
        pool_->RefSequence(id);
        state->AppendBlock(id);
      }
      state->SetNumTokens(p);
      if (p == n) *logits = snap.logits;
      lru_.splice(lru_.begin(), lru_, it->second);  // most recently used; iterators stay valid
      return p;
    }
  }
  return 0;
}

bool PrefixCache::EvictOne() {
  if (lru_.empty()) return false;
  Drop(std::prev(lru_.end()));
  return true;
}

void PrefixCache::Drop(Lru::iterator it) {
  auto [begin, end] = by_key_.equal_range(it->key);
  for (auto k = begin; k != end; ++k) {
    if (k->second == it) {
      by_key_.erase(k);
      break;
    }
  }
  if (--positions_[static_cast<int64_t>(it->tokens.size())] == 0)
    positions_.erase(static_cast<int64_t>(it->tokens.size()));
  for (int32_t id : it->blocks) pool_->UnrefCache(id);
  log_->Free(it->slot);
  lru_.erase(it);
}

}  // namespace k3::cache
