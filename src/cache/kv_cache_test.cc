// KvCache tests: budget split, block reservation, copy-on-write after a fork, release, snapshots with LRU
// eviction, and that a paged state gives the same logits as a standalone one.
#include "src/cache/kv_cache.h"
#include "src/base/check.h"

#include <vector>

#include <gtest/gtest.h>

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
  const int64_t block_bytes = model::ModelSequenceState::MlaBlockFloats(cfg, 4) * 4;
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

TEST(KvCache, ReserveForkCopyOnWriteAndRelease) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto cache = KvCache::Create(cfg, Options(10, false));
  ASSERT_TRUE(cache.ok());
  KvCache& kv = **cache;
  const int64_t total = kv.free_blocks();
  auto a = kv.NewState();
  ASSERT_TRUE(kv.Reserve(a.get(), 6));  // 2 blocks of 4
  EXPECT_EQ(a->num_blocks(), 2);
  EXPECT_EQ(kv.free_blocks(), total - 2);
  for (int64_t p = 0; p < 6; ++p) a->MlaRow(1, p)[0] = static_cast<float>(p);
  a->Advance(6);
  auto b = kv.Fork(*a);
  EXPECT_EQ(b->block_ids(), a->block_ids());
  EXPECT_EQ(kv.free_blocks(), total - 2);
  // b writes position 6 (block 1, shared): copied first; block 0 stays shared.
  ASSERT_TRUE(kv.Reserve(b.get(), 7));
  EXPECT_EQ(b->block_id(0), a->block_id(0));
  EXPECT_NE(b->block_id(1), a->block_id(1));
  EXPECT_EQ(b->MlaRow(1, 5)[0], 5.0f);
  b->MlaRow(1, 6)[0] = 60.0f;
  // a now owns its block 1 alone: written in place.
  const int32_t a1 = a->block_id(1);
  ASSERT_TRUE(kv.Reserve(a.get(), 7));
  EXPECT_EQ(a->block_id(1), a1);
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
}

TEST(KvCache, SlotsAreCounted) {
  auto cache = KvCache::Create(model::testing::TinyK3Config(), Options(10, false));
  ASSERT_TRUE(cache.ok());
  EXPECT_TRUE((*cache)->AcquireSlots(3));
  EXPECT_FALSE((*cache)->AcquireSlots(2));
  (*cache)->ReleaseSlots(3);
  EXPECT_TRUE((*cache)->AcquireSlots(4));
}

TEST(PrefixCache, SnapshotRestoreAndLruEviction) {
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto cache = KvCache::Create(cfg, Options(20, true));
  ASSERT_TRUE(cache.ok());
  KvCache& kv = **cache;
  PrefixCache* pc = kv.prefix();
  ASSERT_NE(pc, nullptr);
  const int64_t total = kv.free_blocks();
  const std::vector<int32_t> tokens = {5, 6, 7, 8, 9, 10};
  auto a = kv.NewState();
  ASSERT_TRUE(kv.Reserve(a.get(), 6));
  a->MlaRow(0, 5)[1] = 3.5f;
  a->kda(0).recurrent[2] = 1.25f;
  a->Advance(6);
  const std::vector<float> logits = {0.5f, 0.25f};
  pc->Insert(tokens, *a, logits);
  EXPECT_TRUE(pc->Contains(tokens));
  kv.Release(a.get());
  EXPECT_EQ(kv.free_blocks(), total - 2);  // the snapshot keeps the blocks
  EXPECT_EQ(kv.Usage(), 0.0);              // but they are reclaimable

  // Full hit: logits come back. Longer prompt: a hit of 6 without logits. Different token: no hit.
  auto b = kv.NewState();
  std::vector<float> got;
  EXPECT_EQ(pc->Restore(tokens, b.get(), &got), 6);
  EXPECT_EQ(got, logits);
  EXPECT_EQ(b->kda(0).recurrent[2], 1.25f);
  EXPECT_EQ(b->MlaRow(0, 5)[1], 3.5f);
  EXPECT_EQ(b->num_tokens(), 6);
  std::vector<int32_t> longer = tokens;
  longer.push_back(1);
  auto c = kv.NewState();
  EXPECT_EQ(pc->Restore(longer, c.get(), &got), 6);
  EXPECT_TRUE(got.empty());
  std::vector<int32_t> other = tokens;
  other[3] = 99;
  auto d = kv.NewState();
  EXPECT_EQ(pc->Restore(other, d.get(), &got), 0);
  // c extends the shared partial block: copy-on-write keeps the snapshot intact.
  ASSERT_TRUE(kv.Reserve(c.get(), 7));
  c->MlaRow(0, 5)[1] = -1.0f;
  c->Advance(1);
  auto e = kv.NewState();
  EXPECT_EQ(pc->Restore(tokens, e.get(), &got), 6);
  EXPECT_EQ(e->MlaRow(0, 5)[1], 3.5f);
  for (auto* s : {b.get(), c.get(), e.get()}) kv.Release(s);
  EXPECT_TRUE(pc->EvictOne());
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

TEST(KvCache, PagedStateGivesTheSameLogitsAsAStandaloneOne) {
  ThreadPool pool(2);
  const io::ModelConfig cfg = model::testing::TinyK3Config();
  auto m = model::testing::MakeRandomModel(cfg, 3, &pool);
  ASSERT_TRUE(m.ok());
  auto cache = KvCache::Create(cfg, Options(20, false));
  ASSERT_TRUE(cache.ok());
  std::vector<int32_t> prompt;
  for (int i = 0; i < 11; ++i) prompt.push_back((i * 37) % 128);
  auto standalone = (*m)->NewSequenceState();
  auto paged = (*cache)->NewState();
  model::ForwardOutput want, got;
  model::SequenceBatchItem item{standalone.get(), prompt, true};
  K3_CHECK_OK((*m)->Forward(std::span<const model::SequenceBatchItem>(&item, 1), &want));
  // Paged: in chunks of 3, 5 and 3 tokens.
  std::vector<float> logits;
  for (auto [from, n] : std::vector<std::pair<int, int>>{{0, 3}, {3, 5}, {8, 3}}) {
    ASSERT_TRUE((*cache)->Reserve(paged.get(), from + n));
    model::SequenceBatchItem chunk{paged.get(), std::span<const int32_t>(prompt.data() + from, n), true};
    K3_CHECK_OK((*m)->Forward(std::span<const model::SequenceBatchItem>(&chunk, 1), &got));
    logits.insert(logits.end(), got.logits.begin(), got.logits.end());
  }
  EXPECT_EQ(logits, want.logits);
}

}  // namespace
}  // namespace k3::cache
