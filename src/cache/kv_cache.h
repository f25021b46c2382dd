// KvCache: the engine's bookkeeping of the model's state memory — paged MLA latent blocks, KDA state
// slots and the prefix cache, sized from one byte budget. The memory itself is the model's (model.h):
// every change here is a slot op in the StateOpLog that the next StepPlan carries.
//
// Budget split (Create): a KDA slot costs the per-sequence KDA bytes (recurrent states + conv tails); a
// block costs num_mla_layers * block_tokens * (R + Rp) * 2 bytes in bf16 (the default; 27,648 B a token
// at K3 size, spec §6), * 4 in fp32. Running sequences get
// min(max_seqs, budget / 2 / slot) slots; with prefix caching a quarter of the budget goes to at most
// 4096 snapshots (a KDA state + one logits row each); the rest is blocks. A sequence holds one slot while it
// is admitted and the blocks its block table names; Reserve makes the blocks for its next tokens writable
// (appends new blocks, copies shared ones), and fails without side effects on correctness when the pool is
// short, so the engine can evict snapshots or preempt.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "src/base/status.h"
#include "src/cache/block_pool.h"
#include "src/cache/paged_sequence.h"
#include "src/cache/prefix_cache.h"
#include "src/io/model_config.h"
#include "src/model/cache_dtype.h"
#include "src/model/state_log.h"

namespace k3::cache {

struct KvCacheOptions {
  int64_t bytes = int64_t{1} << 30;
  int64_t block_tokens = 16;
  int64_t max_seqs = 64;
  bool prefix_caching = true;
  model::CacheDtype cache_dtype = model::CacheDtype::kBf16;  // what the MLA blocks store
};

struct KvCacheLayout {
  int64_t block_bytes = 0;
  int64_t mla_bytes_per_token = 0;  // block_bytes / block_tokens
  int64_t slot_bytes = 0;
  int64_t num_blocks = 0;
  int64_t num_slots = 0;
  int64_t max_snapshots = 0;
};

// The split of options.bytes; InvalidArgument when it cannot hold one slot and one block.
Result<KvCacheLayout> PlanKvCache(const io::ModelConfig& cfg, const KvCacheOptions& options);

class KvCache {
 public:
  // cfg: what one state holds (Model::state_config()). `log`: where states, clones, snapshot copies and
  // copy-on-write block copies are recorded for the model to execute (non-null).
  static Result<std::unique_ptr<KvCache>> Create(const io::ModelConfig& cfg, const KvCacheOptions& options,
                                                 std::shared_ptr<model::StateOpLog> log);

  const KvCacheLayout& layout() const { return layout_; }
  int64_t block_tokens() const { return block_tokens_; }
  // Longest sequence the pool can hold on its own.
  int64_t max_tokens_per_sequence() const { return layout_.num_blocks * block_tokens_; }
  int64_t free_slots() const { return layout_.num_slots - used_slots_; }
  int64_t free_blocks() const { return pool_.num_free(); }

  bool AcquireSlots(int64_t n);
  void ReleaseSlots(int64_t n);

  // An empty paged state in a new model slot (no KDA slot of the budget taken: AcquireSlots does that).
  std::unique_ptr<PagedSequence> NewState() const;
  // Makes positions [num_tokens(), tokens) writable: appends blocks and copies shared ones.
  // False when the pool is short (the state keeps what it had).
  bool Reserve(PagedSequence* state, int64_t tokens);
  // Drops the state's block references and empties it.
  void Release(PagedSequence* state);
  // A copy sharing every block (for n > 1); the first write to a shared block copies it.
  std::unique_ptr<PagedSequence> Fork(const PagedSequence& state);

  // 0..1: bytes of blocks and slots held by sequences over the budget's blocks and slots.
  double Usage() const;

  PrefixCache* prefix() { return prefix_.get(); }  // null when prefix caching is off

 private:
  KvCache(const io::ModelConfig& cfg, const KvCacheOptions& options, const KvCacheLayout& layout,
          std::shared_ptr<model::StateOpLog> log);

  io::ModelConfig cfg_;
  std::shared_ptr<model::StateOpLog> log_;
  KvCacheLayout layout_;
  int64_t block_tokens_;
  model::CacheDtype cache_dtype_;
  BlockPool pool_;
  std::unique_ptr<PrefixCache> prefix_;
  int64_t used_slots_ = 0;
};

}  // namespace k3::cache
