// PrefixCache: hybrid prefix caching for KDA + MLA models (design.md "Hybrid prefix caching").
//
// KDA layers have no per-token cache, so a prompt prefix can be reused only where a snapshot of the
// whole sequence state exists. A snapshot at position p holds the KDA states after p tokens, cache
// references to the MLA blocks covering positions [0, p) (shared copy-on-write with the sequences that
// wrote them) and, at a prompt end, the logits row of token p - 1 (so a full-prompt hit needs no forward).
// Snapshots are keyed by a chained hash: one hash per full block of block_tokens ids, chained from the
// previous block's, then the ids of the partial last block folded in. Tokens are compared on a hit, so a
// hash collision is never a wrong hit. Unused snapshots are evicted least recently used first.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "src/cache/block_pool.h"
#include "src/cache/paged_sequence.h"
#include "src/model/state_log.h"

namespace k3::cache {

class PrefixCache {
 public:
  // At most `max_snapshots` snapshots are kept (each costs one KDA state, a model slot made, copied
  // from and freed through `log`).
  PrefixCache(BlockPool* pool, int64_t block_tokens, int64_t max_snapshots,
              std::shared_ptr<model::StateOpLog> log = nullptr);
  ~PrefixCache();

  int64_t num_snapshots() const { return static_cast<int64_t>(lru_.size()); }
  // True if a snapshot of exactly tokens[0, p) exists.
  bool Contains(std::span<const int32_t> tokens) const;
  // Stores a snapshot of `state` after tokens (state->num_tokens() == tokens.size()); `logits` may be
  // empty. Evicts the least recently used snapshot when full. No-op if one exists already.
  void Insert(std::span<const int32_t> tokens, const PagedSequence& state, std::span<const float> logits);
  // Finds the longest snapshot prefix of `tokens` (at most tokens.size(); a hit at tokens.size() needs
  // stored logits) and restores it into the empty paged `state` (blocks referenced, KDA copied). Returns
  // the tokens restored (0: no hit) and the logits row when the whole of `tokens` was found.
  int64_t Restore(std::span<const int32_t> tokens, PagedSequence* state, std::vector<float>* logits);
  // Drops the least recently used snapshot; false when there is none.
  bool EvictOne();

 private:
  struct Snapshot {
    uint64_t key = 0;
    std::vector<int32_t> tokens;
    std::vector<int32_t> blocks;  // cache references, covering [0, tokens.size())
    std::vector<float> logits;    // empty unless taken at a prompt end
    int32_t slot = -1;            // the model slot holding its KDA state
  };
  using Lru = std::list<Snapshot>;  // front: most recently used

  uint64_t Key(std::span<const int32_t> tokens) const;
  void Drop(Lru::iterator it);

  BlockPool* pool_;
  std::shared_ptr<model::StateOpLog> log_;
  int64_t block_tokens_;
  int64_t max_snapshots_;
  Lru lru_;
  std::unordered_multimap<uint64_t, Lru::iterator> by_key_;
  std::map<int64_t, int64_t> positions_;  // snapshot length -> count (lengths to probe on a lookup)
};

// Chained hash of the full blocks of `tokens`: result[i] covers tokens [0, (i + 1) * block_tokens).
std::vector<uint64_t> ChainedBlockHashes(std::span<const int32_t> tokens, int64_t block_tokens);

}  // namespace k3::cache
