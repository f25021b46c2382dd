// KvCache: budget split, slots, block reservation with copy-on-write, forks and usage.
#include "src/cache/kv_cache.h"

#include <algorithm>

#include "src/base/check.h"
#include "src/model/sequence_state.h"

namespace k3::cache {

Result<KvCacheLayout> PlanKvCache(const io::ModelConfig& cfg, const KvCacheOptions& options) {
  if (options.block_tokens <= 0) return InvalidArgument("block_tokens must be positive");
  if (options.max_seqs <= 0) return InvalidArgument("max_num_seqs must be positive");
  KvCacheLayout l;
  l.block_bytes = std::max<int64_t>(
      model::ModelSequenceState::MlaBlockBytes(cfg, options.block_tokens, options.cache_dtype), 1);
  l.mla_bytes_per_token = model::ModelSequenceState::MlaBlockBytes(cfg, 1, options.cache_dtype);
  const int64_t taps = cfg.short_conv_kernel_size - 1;
  l.slot_bytes = std::max<int64_t>(
      cfg.num_kda_layers() *
          (cfg.kda_num_heads * cfg.kda_head_dim * cfg.kda_head_dim + 3 * taps * cfg.kda_proj_dim()) *
          int64_t{sizeof(float)},
      1);
  const int64_t bytes = options.bytes;
  l.num_slots = std::min<int64_t>(options.max_seqs, bytes / 2 / l.slot_bytes);
  // A snapshot is a KDA state copy plus, at a prompt end, one logits row.
  const int64_t snapshot_bytes = l.slot_bytes + cfg.vocab_size * int64_t{sizeof(float)};
  l.max_snapshots = options.prefix_caching ? std::min<int64_t>(4096, bytes / 4 / snapshot_bytes) : 0;
  const int64_t rest = bytes - l.num_slots * l.slot_bytes - l.max_snapshots * snapshot_bytes;
  // Capped so a model without MLA layers (1-byte blocks) does not get a huge reference table.
  l.num_blocks = std::min<int64_t>(rest / l.block_bytes, int64_t{1} << 22);
  if (l.num_slots < 1 || l.num_blocks < 1) {
    return InvalidArgument(
        "the KV cache budget of {} bytes cannot hold one sequence: a KDA state slot needs {} bytes "
        "(half the budget is for slots) and an MLA block of {} tokens {} bytes; raise --kv-cache-memory",
        bytes, l.slot_bytes, options.block_tokens, l.block_bytes);
  }
  return l;
}

Result<std::unique_ptr<KvCache>> KvCache::Create(const io::ModelConfig& cfg, const KvCacheOptions& options,
                                                 std::shared_ptr<model::StateOpLog> log) {
  if (log == nullptr) return InvalidArgument("the KV cache needs the model's state op log");
  K3_ASSIGN_OR_RETURN(KvCacheLayout layout, PlanKvCache(cfg, options));
  return std::unique_ptr<KvCache>(new KvCache(cfg, options, layout, std::move(log)));
}

KvCache::KvCache(const io::ModelConfig& cfg, const KvCacheOptions& options, const KvCacheLayout& layout,
                 std::shared_ptr<model::StateOpLog> log)
    : cfg_(cfg),
      log_(std::move(log)),
      layout_(layout),
      block_tokens_(options.block_tokens),
      cache_dtype_(options.cache_dtype),
      pool_(layout.num_blocks) {
  if (layout.max_snapshots > 0) {
    prefix_ = std::make_unique<PrefixCache>(&pool_, block_tokens_, layout.max_snapshots, log_);
  }
}

bool KvCache::AcquireSlots(int64_t n) {
  if (used_slots_ + n > layout_.num_slots) return false;
  used_slots_ += n;
  return true;
}

void KvCache::ReleaseSlots(int64_t n) {
  K3_CHECK(n >= 0 && n <= used_slots_);
  used_slots_ -= n;
}

std::unique_ptr<PagedSequence> KvCache::NewState() const {
  return std::make_unique<PagedSequence>(log_, block_tokens_, cache_dtype_);
}

bool KvCache::Reserve(PagedSequence* state, int64_t tokens) {
  K3_CHECK(state->block_tokens() == block_tokens_ && state->cache_dtype() == cache_dtype_ &&
           state->log() == log_.get());
  if (tokens <= state->num_tokens()) return true;
  const int64_t have = state->num_blocks();
  const int64_t need = (tokens + block_tokens_ - 1) / block_tokens_;
  const int64_t first_written = state->num_tokens() / block_tokens_;
  int64_t copies = 0;
  for (int64_t b = first_written; b < std::min(have, need); ++b)
    copies += pool_.total_refs(state->block_id(b)) > 1;
  if (std::max<int64_t>(need - have, 0) + copies > pool_.num_free()) return false;
  for (int64_t b = first_written; b < std::min(have, need); ++b) {
    const int32_t old_id = state->block_id(b);
    if (pool_.total_refs(old_id) == 1) continue;
    const int32_t id = *pool_.Allocate();
    log_->CopyBlock(old_id, id);  // executed before the step that writes into it
    state->ReplaceBlock(b, id);
    pool_.UnrefSequence(old_id);
  }
  for (int64_t b = have; b < need; ++b) {
    state->AppendBlock(*pool_.Allocate());
  }
  return true;
}

void KvCache::Release(PagedSequence* state) {
  for (int32_t id : state->ReleaseBlocks()) pool_.UnrefSequence(id);
}

std::unique_ptr<PagedSequence> KvCache::Fork(const PagedSequence& state) {
  for (int32_t id : state.block_ids()) pool_.RefSequence(id);
  return state.Fork();
}

double KvCache::Usage() const {
  const double total = static_cast<double>(layout_.num_blocks) * static_cast<double>(layout_.block_bytes) +
                       static_cast<double>(layout_.num_slots) * static_cast<double>(layout_.slot_bytes);
  const double used =
      static_cast<double>(pool_.num_in_use_by_sequences()) * static_cast<double>(layout_.block_bytes) +
      static_cast<double>(used_slots_) * static_cast<double>(layout_.slot_bytes);
  return total > 0 ? used / total : 0.0;
}

}  // namespace k3::cache
