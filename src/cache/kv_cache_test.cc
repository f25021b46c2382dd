// KvCache tests: budget split, block reservation, copy-on-write after a fork, release, snapshots with LRU
// eviction, and that a paged state gives the same logits as a standalone one.
#include "src/cache/kv_cache.h"
#include "src/base/check.h"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "src/model/sequence_state.h"
#include "src/model/sequences.h"
#include "src/model/testing/random_model.h"

namespace k3::cache {
namespace {

KvCacheOptions Options(int64_t blocks, bool prefix) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto probe = PlanKvCache(cfg, KvCacheOptions{});
  K3_CHECK(probe.ok());
  KvCacheOptions o;
  o.block_tokens = 4;
  o.max_seqs = 4;
  o.prefix_caching = prefix;
  const int64_t block_bytes = model::ModelSequenceState::MlaBlockBytes(cfg, 4, model::CacheDtype::kBf16);
  // Slots take half of the budget; with prefix caching a quarter more goes to snapshots.
  o.bytes = 8 * probe->slot_bytes + (prefix ? 8 * (probe->slot_bytes + cfg.vocab_size * 4) : 0) +
            blocks * block_bytes;
  return o;
}

TEST(KvCache, BudgetSplit) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto l = PlanKvCache(cfg, Options(10, false));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->num_slots, 4);
  EXPECT_EQ(l->max_snapshots, 0);
  EXPECT_GE(l->num_blocks, 10);
  KvCacheOptions tiny;
  tiny.bytes = 100;
  EXPECT_FALSE(PlanKvCache(cfg, tiny).ok());
}

using model::StateOp;
using model::StateOpKind;

std::shared_ptr<model::StateOpLog> NewLog() { return std::make_shared<model::StateOpLog>(); }

TEST(KvCache, ReserveForkCopyOnWriteAndRelease) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto log = NewLog();
  auto cache = KvCache::Create(cfg, Options(10, false), log);
  ASSERT_TRUE(cache.ok());
  KvCache& kv = **cache;
  const int64_t total = kv.free_blocks();
  auto a = kv.NewState();
  EXPECT_EQ(log->Drain(), (std::vector<StateOp>{{StateOpKind::kNew, a->slot(), 0}}));
  ASSERT_TRUE(kv.Reserve(a.get(), 6));  // 2 blocks of 4
  EXPECT_EQ(a->num_blocks(), 2);
  EXPECT_EQ(kv.free_blocks(), total - 2);
  a->Advance(6);
  auto b = kv.Fork(*a);
  EXPECT_EQ(log->Drain(), (std::vector<StateOp>{{StateOpKind::kClone, a->slot(), b->slot()}}));
  EXPECT_EQ(b->block_ids(), a->block_ids());
  EXPECT_EQ(b->num_tokens(), 6);
  EXPECT_EQ(kv.free_blocks(), total - 2);
  // b writes position 6 (block 1, shared): the model copies it first; block 0 stays shared.
  ASSERT_TRUE(kv.Reserve(b.get(), 7));
  EXPECT_EQ(b->block_id(0), a->block_id(0));
  EXPECT_NE(b->block_id(1), a->block_id(1));
  EXPECT_EQ(log->Drain(), (std::vector<StateOp>{{StateOpKind::kCopyBlock, a->block_id(1), b->block_id(1)}}));
  // a now owns its block 1 alone: written in place, nothing recorded.
  const int32_t a1 = a->block_id(1);
  ASSERT_TRUE(kv.Reserve(a.get(), 7));
  EXPECT_EQ(a->block_id(1), a1);
  EXPECT_TRUE(log->Drain().empty());
  EXPECT_EQ(kv.free_blocks(), total - 3);
  EXPECT_GT(kv.Usage(), 0.0);
  kv.Release(a.get());
  kv.Release(b.get());
  EXPECT_EQ(kv.free_blocks(), total);
  EXPECT_EQ(kv.Usage(), 0.0);
  // Too many tokens: false and nothing taken.
  auto c = kv.NewState();
  EXPECT_FALSE(kv.Reserve(c.get(), (total + 1) * 4));
  EXPECT_EQ(kv.free_blocks(), total);
  const int32_t c_slot = c->slot();
  c.reset();
  EXPECT_EQ(log->Drain(),
            (std::vector<StateOp>{{StateOpKind::kNew, c_slot, 0}, {StateOpKind::kFree, c_slot, 0}}));
}

TEST(KvCache, SlotsAreCounted) {
  auto cache = KvCache::Create(model::testing::TinyK3Config(), Options(10, false), NewLog());
  ASSERT_TRUE(cache.ok());
  EXPECT_TRUE((*cache)->AcquireSlots(3));
  EXPECT_FALSE((*cache)->AcquireSlots(2));
  (*cache)->ReleaseSlots(3);
  EXPECT_TRUE((*cache)->AcquireSlots(4));
}

// The memory plan counts the bytes the blocks really take: 2 a value in bf16 (the default), 4 in fp32,
// so the same budget holds twice the tokens in bf16. At K3 size (24 MLA layers, R + Rp = 512 + 64) a
// token takes 27,648 B in bf16, the spec §6 figure.
TEST(KvCache, Bf16BlocksHoldTwiceTheTokensOfFp32Ones) {
  io::ModelConfig cfg = model::testing::TinyK3Config();
  KvCacheOptions options;
  options.bytes = int64_t{64} << 20;
  options.prefix_caching = false;
  auto bf16 = PlanKvCache(cfg, options);
  options.cache_dtype = model::CacheDtype::kF32;
  auto fp32 = PlanKvCache(cfg, options);
  ASSERT_TRUE(bf16.ok() && fp32.ok());
  const int64_t values = cfg.num_mla_layers() * (cfg.kv_lora_rank + cfg.qk_rope_head_dim);
  EXPECT_EQ(bf16->mla_bytes_per_token, 2 * values);
  EXPECT_EQ(fp32->mla_bytes_per_token, 4 * values);
  EXPECT_EQ(bf16->block_bytes * 2, fp32->block_bytes);
  EXPECT_EQ(bf16->num_slots, fp32->num_slots);
  EXPECT_GE(bf16->num_blocks, 2 * fp32->num_blocks);
  EXPECT_LE(bf16->num_blocks, 2 * fp32->num_blocks + 1);
  cfg.num_layers = 24 + cfg.num_kda_layers();
  cfg.kv_lora_rank = 512;
  cfg.qk_rope_head_dim = 64;
  ASSERT_EQ(cfg.num_mla_layers(), 24);
  EXPECT_EQ(model::ModelSequenceState::MlaBlockBytes(cfg, 1, model::CacheDtype::kBf16), 27648);
  EXPECT_EQ(model::ModelSequenceState::MlaBlockBytes(cfg, 16, model::CacheDtype::kF32), 16 * 2 * 27648);
}

TEST(PrefixCache, SnapshotRestoreAndLruEviction) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto log = NewLog();
  auto cache = KvCache::Create(cfg, Options(20, true), log);
  ASSERT_TRUE(cache.ok());
  KvCache& kv = **cache;
  PrefixCache* pc = kv.prefix();
  ASSERT_NE(pc, nullptr);
  const int64_t total = kv.free_blocks();
  const std::vector<int32_t> tokens = {5, 6, 7, 8, 9, 10};
  auto a = kv.NewState();
  ASSERT_TRUE(kv.Reserve(a.get(), 6));
  a->Advance(6);
  (void)log->Drain();
  const std::vector<float> logits = {0.5f, 0.25f};
  pc->Insert(tokens, *a, logits);
  EXPECT_TRUE(pc->Contains(tokens));
  // The snapshot's KDA state is a model slot of its own, cloned from a's.
  const std::vector<StateOp> inserted = log->Drain();
  ASSERT_EQ(inserted.size(), 1u);
  EXPECT_EQ(inserted[0].kind, StateOpKind::kClone);
  EXPECT_EQ(inserted[0].a, a->slot());
  const int32_t snapshot_slot = inserted[0].b;
  kv.Release(a.get());
  EXPECT_EQ(kv.free_blocks(), total - 2);  // the snapshot keeps the blocks
  EXPECT_EQ(kv.Usage(), 0.0);              // but they are reclaimable

  // Full hit: logits come back and the KDA state is copied in. Longer prompt: a hit of 6 without
  // logits. Different token: no hit.
  auto b = kv.NewState();
  (void)log->Drain();
  std::vector<float> got;
  EXPECT_EQ(pc->Restore(tokens, b.get(), &got), 6);
  EXPECT_EQ(got, logits);
  EXPECT_EQ(log->Drain(), (std::vector<StateOp>{{StateOpKind::kCopyKda, snapshot_slot, b->slot()}}));
  EXPECT_EQ(b->num_tokens(), 6);
  EXPECT_EQ(b->num_blocks(), 2);
  std::vector<int32_t> longer = tokens;
  longer.push_back(1);
  auto c = kv.NewState();
  EXPECT_EQ(pc->Restore(longer, c.get(), &got), 6);
  EXPECT_TRUE(got.empty());
  std::vector<int32_t> other = tokens;
  other[3] = 99;
  auto d = kv.NewState();
  EXPECT_EQ(pc->Restore(other, d.get(), &got), 0);
  EXPECT_EQ(d->num_blocks(), 0);
  // c extends the shared partial block: copy-on-write keeps the snapshot's block intact.
  const int32_t shared = c->block_id(1);
  (void)log->Drain();
  ASSERT_TRUE(kv.Reserve(c.get(), 7));
  EXPECT_EQ(log->Drain(), (std::vector<StateOp>{{StateOpKind::kCopyBlock, shared, c->block_id(1)}}));
  c->Advance(1);
  auto e = kv.NewState();
  EXPECT_EQ(pc->Restore(tokens, e.get(), &got), 6);
  EXPECT_EQ(e->block_id(1), shared);
  for (auto* s : {b.get(), c.get(), e.get()}) kv.Release(s);
  (void)log->Drain();
  EXPECT_TRUE(pc->EvictOne());
  EXPECT_EQ(log->Drain(), (std::vector<StateOp>{{StateOpKind::kFree, snapshot_slot, 0}}));
  EXPECT_FALSE(pc->EvictOne());
  EXPECT_EQ(kv.free_blocks(), total);
}

TEST(PrefixCache, ChainedHashesDependOnEveryEarlierBlock) {
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int32_t> b = a;
  b[0] = 9;
  const auto ha = ChainedBlockHashes(a, 4), hb = ChainedBlockHashes(b, 4);
  ASSERT_EQ(ha.size(), 2u);
  EXPECT_NE(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]);  // same second block, different history
  EXPECT_EQ(ChainedBlockHashes(std::vector<int32_t>(a.begin(), a.begin() + 7), 4).size(), 1u);
}

// Runs `tokens` of each paged state in one plan (the ops recorded since the last one first), then
// advances the states: what the engine does each step.
std::vector<float> Execute(model::Model& m, model::StateOpLog& log,
                           std::vector<std::pair<PagedSequence*, std::span<const int32_t>>> batch) {
  model::StepPlan plan;
  plan.ops = log.Drain();
  for (auto& [seq, tokens] : batch) plan.items.push_back(seq->ToStepItem(tokens, true));
  model::ForwardOutput out;
  K3_CHECK_OK(m.Execute(plan, &out));
  for (auto& [seq, tokens] : batch) seq->Advance(static_cast<int64_t>(tokens.size()));
  return out.logits;
}

TEST(KvCache, PagedStateGivesTheSameLogitsAsAStandaloneOne) {
  ThreadPool pool(2);
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto m = model::testing::MakeRandomModel(cfg, 3, &pool);
  ASSERT_TRUE(m.ok());
  auto log = NewLog();
  auto cache = KvCache::Create(cfg, Options(20, false), log);
  ASSERT_TRUE(cache.ok());
  std::vector<int32_t> prompt;
  for (int i = 0; i < 11; ++i) prompt.push_back((i * 37) % 128);
  model::Sequences standalone(**m);
  model::ForwardOutput want;
  model::SequenceBatchItem item{standalone.New(), prompt, true};
  K3_CHECK_OK(standalone.Forward(std::span<const model::SequenceBatchItem>(&item, 1), &want));
  // Paged: in chunks of 3, 5 and 3 tokens.
  auto paged = (*cache)->NewState();
  std::vector<float> logits;
  for (auto [from, n] : std::vector<std::pair<int, int>>{{0, 3}, {3, 5}, {8, 3}}) {
    ASSERT_TRUE((*cache)->Reserve(paged.get(), from + n));
    const std::vector<float> got =
        Execute(**m, *log, {{paged.get(), std::span<const int32_t>(prompt.data() + from, n)}});
    logits.insert(logits.end(), got.begin(), got.end());
  }
  EXPECT_EQ(logits, want.logits);
}

// The fp32 cache (`--kv-cache-dtype fp32`) stores the same bf16 values in wider words: paged fp32 and bf16
// caches (and the standalone bf16 state) give the same logits, to the rounding order of a remainder lane.
TEST(KvCache, Fp32AndBf16CachesGiveTheSameLogits) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto m = model::testing::MakeRandomModel(cfg, 5, nullptr);
  ASSERT_TRUE(m.ok());
  std::vector<int32_t> prompt;
  for (int i = 0; i < 13; ++i) prompt.push_back((i * 53 + 7) % 128);
  std::vector<std::vector<float>> results;
  for (model::CacheDtype dtype : {model::CacheDtype::kBf16, model::CacheDtype::kF32}) {
    auto log = NewLog();
    KvCacheOptions options = Options(20, true);
    options.cache_dtype = dtype;
    auto cache = KvCache::Create(cfg, options, log);
    ASSERT_TRUE(cache.ok());
    KvCache& kv = **cache;
    auto a = kv.NewState();
    std::vector<float> logits;
    for (auto [from, n] : std::vector<std::pair<int, int>>{{0, 6}, {6, 5}}) {
      ASSERT_TRUE(kv.Reserve(a.get(), from + n));
      logits = Execute(**m, *log, {{a.get(), std::span<const int32_t>(prompt.data() + from, n)}});
    }
    // A fork copies the shared partial block on write (kCopyBlock of a block in this dtype).
    kv.prefix()->Insert(std::span<const int32_t>(prompt.data(), 11), *a, {});
    auto b = kv.Fork(*a);
    ASSERT_TRUE(kv.Reserve(a.get(), 13) && kv.Reserve(b.get(), 13));
    const std::vector<float> got = Execute(**m, *log,
                                           {{a.get(), std::span<const int32_t>(prompt.data() + 11, 2)},
                                            {b.get(), std::span<const int32_t>(prompt.data() + 11, 2)}});
    logits.insert(logits.end(), got.begin(), got.end());
    results.push_back(logits);
    // The model frees the slots (the next dtype's blocks may replace the memory only then).
    kv.Release(a.get());
    kv.Release(b.get());
    a.reset();
    b.reset();
    cache->reset();
    (void)Execute(**m, *log, {});
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  const int64_t rows = static_cast<int64_t>(results[0].size()) / cfg.vocab_size;
  EXPECT_LE(model::testing::MaxRowRelativeError(results[1].data(), results[0].data(), rows, cfg.vocab_size),
            1e-5);
  // Rows of the two forks agree exactly within one cache dtype.
  const float* fork_a = results[0].data() + (rows - 4) * cfg.vocab_size;
  EXPECT_TRUE(std::equal(fork_a, fork_a + 2 * cfg.vocab_size, fork_a + 2 * cfg.vocab_size));
}

// The slot ops the cache records carry the state's content in the model: a fork that copies its shared
// partial block on write, and a prefix restore into a new state, each continue exactly like the
// original sequence.
TEST(KvCache, ForksAndPrefixRestoresContinueLikeTheOriginal) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto m = model::testing::MakeRandomModel(cfg, 4, nullptr);
  ASSERT_TRUE(m.ok());
  auto log = NewLog();
  auto cache = KvCache::Create(cfg, Options(40, true), log);
  ASSERT_TRUE(cache.ok());
  KvCache& kv = **cache;
  const std::vector<int32_t> prompt = {3,  14, 15, 92, 65, 35,
                                       89, 79, 32, 38, 46};  // 11: 3 blocks, last partial
  const int32_t next[] = {26, 43};
  // Reference: prompt, then next[0], next[1] one at a time.
  model::Sequences reference(**m);
  const int32_t ref = reference.New();
  model::ForwardOutput out;
  model::SequenceBatchItem prefill{ref, prompt, false};
  K3_CHECK_OK(reference.Forward(std::span(&prefill, 1), &out));
  std::vector<std::vector<float>> want;
  for (int32_t token : next) {
    model::SequenceBatchItem step{ref, std::span<const int32_t>(&token, 1), false};
    K3_CHECK_OK(reference.Forward(std::span(&step, 1), &out));
    want.push_back(out.logits);
  }

  auto a = kv.NewState();
  ASSERT_TRUE(kv.Reserve(a.get(), 11));
  (void)Execute(**m, *log, {{a.get(), prompt}});
  kv.prefix()->Insert(prompt, *a, {});
  auto b = kv.Fork(*a);
  ASSERT_TRUE(kv.Reserve(a.get(), 12));  // copy-on-write of the partial block (the snapshot and b share it)
  ASSERT_TRUE(kv.Reserve(b.get(), 12));
  auto c = kv.NewState();
  std::vector<float> ready;
  std::vector<int32_t> longer = prompt;
  longer.push_back(next[0]);
  ASSERT_EQ(kv.prefix()->Restore(longer, c.get(), &ready), 11);
  ASSERT_TRUE(kv.Reserve(c.get(), 12));
  std::vector<float> got =
      Execute(**m, *log,
              {{a.get(), std::span(next, 1)}, {b.get(), std::span(next, 1)}, {c.get(), std::span(next, 1)}});
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(model::testing::MaxRowRelativeError(got.data() + i * cfg.vocab_size, want[0].data(), 1,
                                                  cfg.vocab_size),
              1e-5)
        << "sequence " << i;
  }
  // One more step each: the copies did not write into each other's blocks.
  for (auto* s : {a.get(), b.get(), c.get()}) ASSERT_TRUE(kv.Reserve(s, 13));
  got = Execute(**m, *log,
                {{a.get(), std::span(next + 1, 1)},
                 {b.get(), std::span(next + 1, 1)},
                 {c.get(), std::span(next + 1, 1)}});
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(model::testing::MaxRowRelativeError(got.data() + i * cfg.vocab_size, want[1].data(), 1,
                                                  cfg.vocab_size),
              1e-5)
        << "sequence " << i;
  }
}

}  // namespace
}  // namespace k3::cache
