// The sharded forward pass and the step protocol, with ranks as threads (ThreadCommunicators): for the
// K3 and Kimi Linear variants, 2 and 4 ranks, TP and EP, logits of every prompt position and the greedy
// continuation equal one process's (1e-5 relative L2); clones (n > 1) and malformed plans. The same with
// ranks as processes over Gloo is tests/dist.
#include "src/model/rank_group.h"

#include <thread>

#include <gtest/gtest.h>

#include "src/base/check.h"
#include "src/model/greedy.h"
#include "src/model/sequences.h"
#include "src/model/state_log.h"
#include "src/model/step_plan.h"
#include "src/model/testing/random_model.h"
#include "src/model/testing/thread_communicator.h"
#include "src/model/testing/thread_group.h"

namespace k3::model {
namespace {

using testing::MaxRowRelativeError;

std::vector<int32_t> Prompt(int64_t n, int32_t vocab) {
  std::vector<int32_t> ids(n);
  uint32_t x = 12345;
  for (int32_t& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab));
  }
  return ids;
}

using testing::ThreadGroup;

std::vector<float> AllLogits(Model& model, std::span<const int32_t> prompt) {
  Sequences seqs(model);
  SequenceBatchItem item{seqs.New(), prompt, true};
  ForwardOutput out;
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&item, 1), &out));
  return out.logits;
}

struct Case {
  const char* name;
  io::ModelConfig (*config)();
  int world;
  bool ep;
};

class ShardedEqualsOneProcess : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedEqualsOneProcess, LogitsAndGreedy) {
  const Case& c = GetParam();
  const io::ModelConfig cfg = c.config();
  ASSERT_TRUE(CheckShardable(cfg, ShardSpec{0, c.world, c.ep}).ok());
  auto tensors = testing::MakeRandomTensors(cfg, 7);
  auto lookup = [tensors](const std::string& name) { return tensors->Find(name); };
  auto single = Model::FromTensors(cfg, lookup, tensors, nullptr);
  ASSERT_TRUE(single.ok()) << single.status().ToString();
  const std::vector<int32_t> prompt = Prompt(19, static_cast<int32_t>(cfg.vocab_size));
  const std::vector<float> want = AllLogits(**single, prompt);
  auto want_greedy = GreedyGenerate(**single, prompt, 12, nullptr);
  ASSERT_TRUE(want_greedy.ok());

  ThreadGroup group(cfg, tensors, c.world, c.ep);
  const std::vector<float> got = AllLogits(group.leader(), prompt);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(MaxRowRelativeError(got.data(), want.data(), 19, cfg.vocab_size), 1e-5);
  auto got_greedy = GreedyGenerate(group.leader(), prompt, 12, nullptr);
  ASSERT_TRUE(got_greedy.ok()) << got_greedy.status().ToString();
  EXPECT_EQ(*got_greedy, *want_greedy);

  // A clone continues like its original (the workers replay the clone).
  auto seqs = std::make_unique<Sequences>(group.leader());
  const int32_t state = seqs->New();
  SequenceBatchItem first{state, std::span<const int32_t>(prompt).first(10), false};
  ForwardOutput out;
  ASSERT_TRUE(seqs->Forward(std::span(&first, 1), &out).ok());
  const int32_t copy = seqs->Clone(state);
  SequenceBatchItem both[] = {{state, std::span<const int32_t>(prompt).subspan(10, 9), false},
                              {copy, std::span<const int32_t>(prompt).subspan(10, 9), false}};
  ASSERT_TRUE(seqs->Forward(both, &out).ok());
  ASSERT_EQ(out.rows, 2);
  const float* last = want.data() + 18 * cfg.vocab_size;
  EXPECT_LT(MaxRowRelativeError(out.logits.data(), last, 1, cfg.vocab_size), 1e-5);
  EXPECT_LT(MaxRowRelativeError(out.logits.data() + cfg.vocab_size, last, 1, cfg.vocab_size), 1e-5);
  seqs.reset();  // frees both slots on every rank

  // Paged bf16 MLA blocks of 8 tokens on every rank (the plans the engine's KV cache writes): the prompt's
  // first 10 tokens into blocks {3, 4}; a clone whose shared partial block 4 is copied into 5 (kCopyBlock,
  // a bf16 block's bytes); both finish the prompt in new blocks and give the last row of `want`.
  StateOpLog log;
  const int32_t paged = log.New();
  StepItem head{paged, 0, false, 8, std::vector<int32_t>(prompt.begin(), prompt.begin() + 10), {3, 4}};
  ASSERT_TRUE(group.leader().Execute(StepPlan{.ops = log.Drain(), .items = {head}}, &out).ok());
  const int32_t paged_copy = log.Clone(paged);
  log.CopyBlock(4, 5);
  const std::vector<int32_t> tail(prompt.begin() + 10, prompt.end());
  StepPlan rest{.ops = log.Drain(),
                .items = {StepItem{paged, 10, false, 8, tail, {3, 4, 6}},
                          StepItem{paged_copy, 10, false, 8, tail, {3, 5, 7}, CacheDtype::kBf16}}};
  ASSERT_TRUE(group.leader().Execute(rest, &out).ok());
  ASSERT_EQ(out.rows, 2);
  EXPECT_LT(MaxRowRelativeError(out.logits.data(), last, 1, cfg.vocab_size), 1e-5);
  EXPECT_LT(MaxRowRelativeError(out.logits.data() + cfg.vocab_size, last, 1, cfg.vocab_size), 1e-5);
  log.Free(paged);
  log.Free(paged_copy);
  ASSERT_TRUE(group.leader().Execute(StepPlan{.ops = log.Drain()}, &out).ok());
  EXPECT_TRUE(group.Finish().ok()) << group.Finish().ToString();
}

INSTANTIATE_TEST_SUITE_P(Layouts, ShardedEqualsOneProcess,
                         ::testing::Values(Case{"K3Tp2", testing::TinyK3Config, 2, false},
                                           Case{"K3Tp4", testing::TinyK3Config, 4, false},
                                           Case{"K3Ep2", testing::TinyK3Config, 2, true},
                                           Case{"K3Ep4", testing::TinyK3Config, 4, true},
                                           Case{"LinearTp2", testing::TinyKimiLinearConfig, 2, false},
                                           Case{"LinearTp4", testing::TinyKimiLinearConfig, 4, false},
                                           Case{"LinearEp4", testing::TinyKimiLinearConfig, 4, true}),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(ShardTest, RefusesWhatDoesNotDivide) {
  io::ModelConfig cfg = testing::TinyK3Config();
  Status s = CheckShardable(cfg, ShardSpec{0, 3, false});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--tensor-parallel-size 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("heads (4)"), std::string::npos) << s.message();
  cfg.num_experts = 6;
  s = CheckShardable(cfg, ShardSpec{0, 4, true});
  EXPECT_NE(s.message().find("--enable-expert-parallel"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckShardable(cfg, ShardSpec{0, 4, false}).ok());
}

// Every view of a rank's weights says which part of the checkpoint's tensor it holds: column-parallel
// rows, row-parallel columns, the replicated ones whole.
TEST(ShardTest, ViewsSayWhichPartTheyHold) {
  for (bool ep : {false, true}) {
    const io::ModelConfig cfg = testing::TinyK3Config();
    auto tensors = testing::MakeRandomTensors(cfg, 2);
    auto w = BindWeights(cfg, [tensors](const std::string& name) { return tensors->Find(name); });
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_TRUE((*w)->lm_head.shard.whole());
    ShardWeights(cfg, ShardSpec{1, 2, ep}, w->get());
    const ModelWeights& m = **w;
    EXPECT_EQ(m.lm_head.shard, (TensorShard{0, 1, 2}));
    EXPECT_EQ(m.lm_head.rows, cfg.vocab_size / 2);
    EXPECT_TRUE(m.embed.shard.whole());
    bool saw_kda = false, saw_mla = false, saw_moe = false;
    for (const LayerWeights& layer : m.layers) {
      if (layer.attention == io::AttentionKind::kKda) {
        saw_kda = true;
        EXPECT_EQ(layer.kda.q_proj.shard, (TensorShard{0, 1, 2}));
        EXPECT_EQ(layer.kda.o_proj.shard, (TensorShard{1, 1, 2}));
        EXPECT_TRUE(layer.kda.f_a_proj.shard.whole());
      } else {
        saw_mla = true;
        EXPECT_EQ(layer.mla.kv_b_proj.shard, (TensorShard{0, 1, 2}));
        EXPECT_EQ(layer.mla.o_proj.shard, (TensorShard{1, 1, 2}));
        EXPECT_TRUE(layer.mla.kv_a_proj.shard.whole());
      }
      if (layer.ffn != io::FfnKind::kMoe) continue;
      saw_moe = true;
      for (const ExpertWeights& e : layer.moe.experts) {
        if (ep) {  // whole experts or none
          EXPECT_TRUE(e.gate.shard.whole());
        } else {
          EXPECT_EQ(e.gate.shard, (TensorShard{0, 1, 2}));
          EXPECT_EQ(e.down.shard, (TensorShard{1, 1, 2}));
        }
      }
    }
    EXPECT_TRUE(saw_kda && saw_mla && saw_moe);
  }
}

TEST(ShardTest, SplitRangeCoversEveryUnitOnce) {
  for (int world : {1, 2, 3, 4, 8}) {
    int64_t next = 0;
    for (int r = 0; r < world; ++r) {
      Range range = SplitRange(64, 32, r, world);
      EXPECT_EQ(range.begin, next);
      EXPECT_EQ(range.begin % 32, 0);
      next = range.end;
    }
    EXPECT_EQ(next, 64);
  }
}

TEST(StepPlanTest, RoundTripsAndRefusesMalformed) {
  StepPlan plan;
  plan.sequence = 42;
  plan.ops = {{StateOpKind::kNew, 3, 0}, {StateOpKind::kCopyBlock, 1, 2}, {StateOpKind::kFree, 3, 0}};
  plan.items.push_back(StepItem{5, 17, true, 16, {1, 2, 3}, {7, 8}});
  plan.items.push_back(StepItem{6, 0, false, 4, {9}, {2}, CacheDtype::kF32});
  plan.items.push_back(
      StepItem{7,
               0,
               true,
               4,
               {4, 5, 5, 5, 6},
               {3},
               CacheDtype::kBf16,
               {EmbeddingRun{1, 2, 3, {1, 2, 3, 4, 5, 6}}, EmbeddingRun{3, 1, 3, {7, 8, 9}}}});
  const std::string bytes = EncodeStepPlan(plan);
  auto decoded = DecodeStepPlan(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, plan);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(DecodeStepPlan(bytes.substr(0, n)).ok()) << n;
  EXPECT_FALSE(DecodeStepPlan(bytes + "x").ok());
  std::string bad = bytes;
  bad[0] = 'X';
  EXPECT_NE(DecodeStepPlan(bad).status().message().find("magic"), std::string::npos);
  bad = bytes;
  bad[4] = 9;  // version
  EXPECT_NE(DecodeStepPlan(bad).status().message().find("version"), std::string::npos);
  bad = bytes;
  bad[4 + 4 + 1 + 8] = static_cast<char>(0xff);  // op count far past the end
  EXPECT_FALSE(DecodeStepPlan(bad).ok());

  // Embedding runs that overlap, leave the item's tokens, are empty or have no width are refused.
  const std::vector<std::pair<std::vector<EmbeddingRun>, const char*>> bad_runs = {
      {{EmbeddingRun{1, 2, 3, std::vector<uint16_t>(6)}, EmbeddingRun{2, 1, 3, std::vector<uint16_t>(3)}},
       "overlapping"},
      {{EmbeddingRun{4, 2, 3, std::vector<uint16_t>(6)}}, "past the tokens"},
      {{EmbeddingRun{0, 0, 3, {}}}, "empty"},
      {{EmbeddingRun{0, 1, 0, {}}}, "no width"},
  };
  for (const auto& [runs, what] : bad_runs) {
    StepPlan with_runs;
    with_runs.sequence = 1;
    with_runs.items.push_back(StepItem{1, 0, false, 0, {1, 2, 3, 4, 5}, {}, CacheDtype::kBf16, runs});
    auto result = DecodeStepPlan(EncodeStepPlan(with_runs));
    ASSERT_FALSE(result.ok()) << what;
    EXPECT_NE(result.status().message().find("embedding run"), std::string::npos)
        << result.status().ToString();
  }
}

// A worker fed a plan that names a slot it never saw ends with an error instead of crashing.
TEST(RankGroupTest, WorkerRefusesUnknownSlot) {
  const io::ModelConfig cfg = testing::TinyKimiLinearConfig();
  auto tensors = testing::MakeRandomTensors(cfg, 3);
  auto lookup = [tensors](const std::string& name) { return tensors->Find(name); };
  auto comms = testing::MakeThreadCommunicators(2);
  auto worker =
      Model::FromTensors(cfg, lookup, tensors, nullptr, Parallelism{ShardSpec{1, 2, false}, comms[1].get()});
  ASSERT_TRUE(worker.ok());
  Status result;
  std::thread t([&] { result = RunWorker(**worker, *comms[1]); });
  StepPlan plan;
  plan.sequence = 1;
  plan.items.push_back(StepItem{9, 0, false, 0, {1}, {}});
  std::string bytes = EncodeStepPlan(plan);
  ASSERT_TRUE(dist::BroadcastBytes(*comms[0], &bytes, 0, kMaxPlanBytes).ok());
  t.join();
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.message().find("slot 9"), std::string::npos) << result.message();
}

}  // namespace
}  // namespace k3::model
