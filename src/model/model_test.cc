// Model forward-pass invariants on small random-weight models (K3 and Kimi Linear variants):
// chunking a prompt, batching sequences, and cloning states do not change logits; loading reports
// missing tensors and dtype/shape mismatches by name.
#include "src/model/model.h"
#include "src/base/bf16.h"
#include "src/base/check.h"

#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "src/model/sequences.h"
#include "src/model/state_slots.h"
#include "src/model/tensors.h"
#include "src/model/testing/random_model.h"

namespace k3::model {
namespace {

using testing::MaxRowRelativeError;

std::vector<int32_t> Prompt(int64_t n, int32_t vocab, uint32_t seed) {
  std::vector<int32_t> ids(n);
  uint32_t x = seed * 2654435761u + 1;
  for (int32_t& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab));
  }
  return ids;
}

// Logits of every prompt token, feeding the prompt in pieces of the given lengths.
std::vector<float> LogitsInPieces(Model& model, const std::vector<int32_t>& prompt,
                                  const std::vector<int64_t>& pieces, CacheDtype dtype = CacheDtype::kBf16) {
  Sequences seqs(model, dtype);
  const int32_t state = seqs.New();
  std::vector<float> all;
  int64_t pos = 0;
  for (int64_t len : pieces) {
    SequenceBatchItem item{state, std::span<const int32_t>(prompt.data() + pos, len), true};
    ForwardOutput out;
    K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&item, 1), &out));
    EXPECT_EQ(out.rows, len);
    all.insert(all.end(), out.logits.begin(), out.logits.end());
    pos += len;
  }
  EXPECT_EQ(pos, static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(seqs.num_tokens(state), pos);
  return all;
}

class ModelTest : public ::testing::TestWithParam<bool> {
 protected:
  io::ModelConfig Config() const {
    return GetParam() ? testing::TinyK3Config() : testing::TinyKimiLinearConfig();
  }
};

// The hybrid model (KDA + MLA, AttnRes, MoE) with the default KDA prefill form: one chunk, several
// chunks and token by token give the same logits.
TEST_P(ModelTest, ChunkingDoesNotChangeLogits) {
  io::ModelConfig cfg = Config();
  auto model = testing::MakeRandomModel(cfg, 7, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const int64_t n = 70;
  const std::vector<int32_t> prompt = Prompt(n, cfg.vocab_size, 3);
  const std::vector<float> one = LogitsInPieces(**model, prompt, {n});
  for (float v : one) ASSERT_TRUE(std::isfinite(v));
  const std::vector<float> several = LogitsInPieces(**model, prompt, {30, 37, 1, 2});
  const std::vector<float> by_token = LogitsInPieces(**model, prompt, std::vector<int64_t>(n, 1));
  EXPECT_LE(MaxRowRelativeError(several.data(), one.data(), n, cfg.vocab_size), 1e-5);
  EXPECT_LE(MaxRowRelativeError(by_token.data(), one.data(), n, cfg.vocab_size), 1e-5);
}

// The MLA cache in bf16 (the default) or fp32 words holds the same bf16 values: the same logits, to the
// rounding order of a remainder lane (the tiny model's rows are 40 wide; at K3 size, 576, bit for bit).
TEST_P(ModelTest, Fp32AndBf16CachesGiveTheSameLogits) {
  io::ModelConfig cfg = Config();
  auto model = testing::MakeRandomModel(cfg, 9, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const int64_t n = 40;
  const std::vector<int32_t> prompt = Prompt(n, cfg.vocab_size, 5);
  const std::vector<float> bf16 = LogitsInPieces(**model, prompt, {25, 1, 14});
  const std::vector<float> fp32 = LogitsInPieces(**model, prompt, {25, 1, 14}, CacheDtype::kF32);
  EXPECT_LE(MaxRowRelativeError(fp32.data(), bf16.data(), n, cfg.vocab_size), 1e-5);
}

// With the chunked KDA form (fp32 reassociation of the same sums; kda_core_test and kda_test compare it
// with the recurrence), pieces that keep every KDA call on the same algorithm (no chunk boundary moved)
// give identical logits.
TEST_P(ModelTest, HybridChunkedPrefillIsDeterministic) {
  io::ModelConfig cfg = Config();
  auto model = testing::MakeRandomModel(cfg, 9, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  (*model)->SetKdaPrefillForm(KdaPrefillForm::kChunked);
  const std::vector<int32_t> prompt = Prompt(40, cfg.vocab_size, 4);
  const std::vector<float> first = LogitsInPieces(**model, prompt, {25, 15});
  const std::vector<float> again = LogitsInPieces(**model, prompt, {25, 15});
  EXPECT_EQ(first, again);
  for (float v : first) ASSERT_TRUE(std::isfinite(v));
}

TEST_P(ModelTest, BatchingDoesNotChangeLogits) {
  ThreadPool pool(2);
  io::ModelConfig cfg = Config();
  auto model = testing::MakeRandomModel(cfg, 11, &pool);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  constexpr int kSeqs = 8, kSteps = 3;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < kSeqs; ++i) prompts.push_back(Prompt(5 + 3 * i, cfg.vocab_size, 100 + i));
  const std::vector<int32_t> decode_ids = Prompt(kSteps, cfg.vocab_size, 999);

  // Sequence 0 alone: prefill, then kSteps decode tokens.
  std::vector<std::vector<float>> alone;
  Sequences seqs(**model);
  {
    const int32_t state = seqs.New();
    ForwardOutput out;
    SequenceBatchItem item{state, prompts[0], false};
    K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&item, 1), &out));
    alone.push_back(out.logits);
    for (int s = 0; s < kSteps; ++s) {
      SequenceBatchItem step{state, std::span<const int32_t>(&decode_ids[s], 1), false};
      K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&step, 1), &out));
      alone.push_back(out.logits);
    }
    seqs.Free(state);
  }
  // All 8 together; sequences 4..7 join one step late, so prefill chunks and decode tokens mix.
  std::vector<int32_t> states;
  for (int i = 0; i < kSeqs; ++i) states.push_back(seqs.New());
  for (int step = 0; step <= kSteps; ++step) {
    std::vector<SequenceBatchItem> items;
    for (int i = 0; i < kSeqs; ++i) {
      const int joined = i < 4 ? 0 : 1;
      if (step < joined) continue;
      if (step == joined) {
        items.push_back({states[i], prompts[i], false});
      } else {
        items.push_back({states[i], std::span<const int32_t>(&decode_ids[step - joined - 1], 1), false});
      }
    }
    ForwardOutput out;
    K3_CHECK_OK(seqs.Forward(items, &out));
    ASSERT_EQ(out.rows, static_cast<int64_t>(items.size()));
    // Row 0 is sequence 0.
    EXPECT_LE(MaxRowRelativeError(out.logits.data(), alone[step].data(), 1, cfg.vocab_size), 1e-5)
        << "step " << step;
  }
}

// routed_experts_run counts each MoE layer's distinct experts once however many tokens chose them: one
// token runs top-k per layer; the same token twice (two sequences, one batch) still top-k; a long prompt
// at least that and at most every expert.
TEST_P(ModelTest, RoutedExpertsRunCountsDistinctExpertsPerLayer) {
  io::ModelConfig cfg = Config();
  auto model = testing::MakeRandomModel(cfg, 3, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < cfg.num_layers; ++l) moe_layers += cfg.LayerFfn(l) == io::FfnKind::kMoe;
  Sequences seqs(**model);
  const std::vector<int32_t> one = {7};
  SequenceBatchItem items[2] = {{seqs.New(), one, false}, {seqs.New(), one, false}};
  ForwardOutput out;
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(items, 1), &out));
  EXPECT_EQ(out.routed_experts_run, moe_layers * cfg.num_experts_per_token);
  items[0].slot = seqs.New();
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(items, 2), &out));
  EXPECT_EQ(out.routed_experts_run, moe_layers * cfg.num_experts_per_token);
  const std::vector<int32_t> prompt = Prompt(40, cfg.vocab_size, 4);
  SequenceBatchItem long_item{seqs.New(), prompt, false};
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&long_item, 1), &out));
  EXPECT_GE(out.routed_experts_run, moe_layers * cfg.num_experts_per_token);
  EXPECT_LE(out.routed_experts_run, moe_layers * cfg.num_experts);
}

TEST_P(ModelTest, CloneContinuesIdentically) {
  io::ModelConfig cfg = Config();
  auto model = testing::MakeRandomModel(cfg, 5, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<int32_t> prompt = Prompt(9, cfg.vocab_size, 1);
  Sequences seqs(**model);
  const int32_t state = seqs.New();
  ForwardOutput out;
  SequenceBatchItem item{state, prompt, false};
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&item, 1), &out));
  const int32_t copy = seqs.Clone(state);
  EXPECT_EQ(seqs.num_tokens(copy), 9);
  const int32_t next = 17;
  ForwardOutput a, b;
  SequenceBatchItem step_a{state, std::span<const int32_t>(&next, 1), false};
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&step_a, 1), &a));
  // The original advanced; the copy did not share its storage.
  SequenceBatchItem step_b{copy, std::span<const int32_t>(&next, 1), false};
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&step_b, 1), &b));
  EXPECT_EQ(a.logits, b.logits);
  // A different history gives different logits (the state matters).
  const int32_t fresh = seqs.New();
  ForwardOutput c;
  SequenceBatchItem step_c{fresh, std::span<const int32_t>(&next, 1), false};
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&step_c, 1), &c));
  EXPECT_GT(MaxRowRelativeError(c.logits.data(), a.logits.data(), 1, cfg.vocab_size), 1e-3);
}

// A plan the model cannot run is DataLoss naming what is wrong, never an abort: the engine and the
// other ranks' plans reach the model through the same Execute.
// capture_hidden (k3 run --dump-hidden): layer 0 is the embedding rows, one array per layer after it, and
// the final rows are what lm_head multiplies into the logits; capturing changes no logit.
TEST_P(ModelTest, CapturedHiddenStatesExplainTheLogits) {
  const io::ModelConfig cfg = Config();
  auto tensors = testing::MakeRandomTensors(cfg, 17);
  auto model = Model::FromTensors(
      cfg, [&](const std::string& name) { return tensors->Find(name); }, tensors, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<int32_t> prompt = Prompt(7, cfg.vocab_size, 3);
  const int64_t D = cfg.hidden_size, N = cfg.vocab_size, T = 7;
  ForwardOutput plain, captured;
  captured.capture_hidden = true;
  for (ForwardOutput* out : {&plain, &captured}) {
    Sequences seqs(**model);
    SequenceBatchItem item{seqs.New(), prompt, true};
    K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&item, 1), out));
  }
  EXPECT_EQ(plain.logits, captured.logits);
  EXPECT_TRUE(plain.layer_hidden.empty());
  ASSERT_EQ(captured.layer_hidden.size(), static_cast<size_t>(cfg.num_layers + 1));
  for (const auto& layer : captured.layer_hidden) ASSERT_EQ(layer.size(), static_cast<size_t>(T * D));
  ASSERT_EQ(captured.final_hidden.size(), static_cast<size_t>(T * D));
  const io::TensorView* embed = tensors->Find(GlobalTensorName(cfg, "model.embed_tokens.weight"));
  const io::TensorView* head = tensors->Find(
      GlobalTensorName(cfg, cfg.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight"));
  ASSERT_NE(embed, nullptr);
  ASSERT_NE(head, nullptr);
  auto weight = [](const io::TensorView* w, int64_t row, int64_t col, int64_t width) {
    return Bf16ToFloat(reinterpret_cast<const bf16*>(w->data)[row * width + col]);
  };
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t d = 0; d < D; ++d)
      ASSERT_EQ(captured.layer_hidden[0][t * D + d], weight(embed, prompt[t], d, D)) << t << ", " << d;
  }
  std::vector<float> recomputed(static_cast<size_t>(T * N));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t v = 0; v < N; ++v) {
      double sum = 0;
      for (int64_t d = 0; d < D; ++d) sum += double(captured.final_hidden[t * D + d]) * weight(head, v, d, D);
      recomputed[t * N + v] = static_cast<float>(sum);
    }
  }
  EXPECT_LT(MaxRowRelativeError(captured.logits.data(), recomputed.data(), T, N), 1e-4);
  // The layers change the stream: the last layer's rows are not the embeddings.
  EXPECT_NE(captured.layer_hidden.back(), captured.layer_hidden[0]);
}

TEST_P(ModelTest, BadPlansAreDataLoss) {
  io::ModelConfig cfg = Config();
  auto model = testing::MakeRandomModel(cfg, 5, nullptr);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto run = [&](StepPlan plan) {
    ForwardOutput out;
    return (*model)->Execute(plan, &out);
  };
  auto item = [](int32_t slot, int64_t pos, std::vector<int32_t> tokens) {
    StepItem i;
    i.slot = slot;
    i.start_pos = pos;
    i.tokens = std::move(tokens);
    return i;
  };
  StepPlan make;
  make.ops = {{StateOpKind::kNew, 1, 0}};
  ASSERT_TRUE(run(make).ok());
  struct Bad {
    StepPlan plan;
    const char* says;
  };
  std::vector<Bad> bad;
  bad.push_back({StepPlan{.items = {item(2, 0, {1})}}, "slot 2, which does not exist"});
  bad.push_back({StepPlan{.items = {item(1, 0, {1}), item(1, 0, {2})}}, "appears twice"});
  bad.push_back({StepPlan{.items = {item(1, 5, {1})}}, "position 0 here but 5"});
  bad.push_back(
      {StepPlan{.items = {item(1, 0, {static_cast<int32_t>(cfg.vocab_size)})}}, "outside the vocabulary"});
  bad.push_back({StepPlan{.items = {item(1, 0, {})}}, "no new tokens"});
  bad.push_back({StepPlan{.ops = {{StateOpKind::kNew, 1, 0}}}, "reuses slot 1"});
  bad.push_back({StepPlan{.ops = {{StateOpKind::kFree, 3, 0}}}, "frees slot 3"});
  bad.push_back({StepPlan{.ops = {{StateOpKind::kNew, 4, 7}}}, "slot 4 with cache dtype 7"});
  bad.push_back({StepPlan{.ops = {{StateOpKind::kCopyBlock, 0, 1}}}, "block 0, which was never written"});
  StepItem paged = item(1, 0, {1, 2, 3});
  paged.block_tokens = 2;
  paged.blocks = {7};
  bad.push_back({StepPlan{.items = {paged}}, "1 blocks for 3 tokens"});
  paged.blocks = {7, kMaxBlockId};
  bad.push_back({StepPlan{.items = {paged}}, "out of range"});
  StepItem image = item(1, 0, {1, 2, 3});
  image.embeddings = {EmbeddingRun{1, 1, static_cast<int32_t>(cfg.hidden_size) + 1,
                                   std::vector<uint16_t>(static_cast<size_t>(cfg.hidden_size) + 1)}};
  bad.push_back({StepPlan{.items = {image}}, "an embedding run of width"});
  for (const Bad& b : bad) {
    const Status s = run(b.plan);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << b.says;
    EXPECT_NE(s.message().find(b.says), std::string::npos) << s.ToString();
  }
  // The slot is still usable after the refused plans.
  EXPECT_TRUE(run(StepPlan{.items = {item(1, 0, {1, 2})}}).ok());

  // Sleep mode's kReleaseBlocks: refused while a paged slot lives; afterwards the blocks' memory is gone
  // (copying block 7 is a copy of a block never written) and a new paged slot works again.
  StepItem written = item(2, 0, {1, 2, 3});
  written.block_tokens = 2;
  written.blocks = {7, 8};
  ASSERT_TRUE(run(StepPlan{.ops = {{StateOpKind::kNew, 2, 0}}, .items = {written}}).ok());
  const Status live = run(StepPlan{.ops = {{StateOpKind::kReleaseBlocks, 0, 0}}});
  EXPECT_EQ(live.code(), StatusCode::kDataLoss);
  EXPECT_NE(live.message().find("slot 2 uses blocks"), std::string::npos) << live.ToString();
  EXPECT_TRUE(run(StepPlan{.ops = {{StateOpKind::kCopyBlock, 7, 9}}}).ok());
  ASSERT_TRUE(run(StepPlan{.ops = {{StateOpKind::kFree, 2, 0}, {StateOpKind::kReleaseBlocks, 0, 0}}}).ok());
  const Status gone = run(StepPlan{.ops = {{StateOpKind::kCopyBlock, 7, 9}}});
  EXPECT_NE(gone.message().find("block 7, which was never written"), std::string::npos) << gone.ToString();
  ASSERT_TRUE(run(StepPlan{.ops = {{StateOpKind::kNew, 3, 0}}}).ok());
  StepItem again = written;
  again.slot = 3;
  EXPECT_TRUE(run(StepPlan{.items = {again}}).ok());
  // A paged slot keeps the cache dtype of its blocks.
  StepItem other_dtype = item(3, 3, {4});
  other_dtype.block_tokens = 2;
  other_dtype.blocks = {7, 8};
  other_dtype.cache_dtype = CacheDtype::kF32;
  const Status dtype = run(StepPlan{.items = {other_dtype}});
  EXPECT_EQ(dtype.code(), StatusCode::kDataLoss);
  EXPECT_NE(dtype.message().find("slot 3 has bf16 blocks, not fp32"), std::string::npos) << dtype.ToString();
}

INSTANTIATE_TEST_SUITE_P(Variants, ModelTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "KimiK3" : "KimiLinear";
                         });

// Loading errors name the tensor and say what was expected and found.
class LoadErrorTest : public ::testing::Test {
 protected:
  Result<std::unique_ptr<Model>> Load(const testing::RandomTensors& tensors) {
    return Model::FromTensors(
        cfg_, [&tensors](const std::string& name) { return tensors.Find(name); }, nullptr, nullptr);
  }
  io::ModelConfig cfg_ = testing::TinyK3Config();
};

TEST_F(LoadErrorTest, MissingTensor) {
  auto tensors = testing::MakeRandomTensors(cfg_, 1);
  const std::string name = "language_model.model.layers.2.self_attn.kv_b_proj.weight";
  ASSERT_EQ(tensors->views.erase(name), 1u);
  auto model = Load(*tensors);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
  EXPECT_NE(model.status().message().find(name), std::string::npos) << model.status().message();
  EXPECT_NE(model.status().message().find("[128, 32]"), std::string::npos) << model.status().message();
}

TEST_F(LoadErrorTest, WrongDtype) {
  auto tensors = testing::MakeRandomTensors(cfg_, 1);
  const std::string name = "language_model.model.layers.1.block_sparse_moe.experts.3.w2.weight_packed";
  tensors->views.at(name).dtype = io::DType::kI8;
  auto model = Load(*tensors);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = model.status().message();
  EXPECT_NE(msg.find(name), std::string::npos) << msg;
  EXPECT_NE(msg.find("I8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("U8"), std::string::npos) << msg;
}

TEST_F(LoadErrorTest, WrongShape) {
  auto tensors = testing::MakeRandomTensors(cfg_, 1);
  const std::string name = "language_model.model.layers.0.self_attn.q_proj.weight";
  io::TensorView& view = tensors->views.at(name);
  view.shape = {32, 128};  // same bytes, transposed shape
  auto model = Load(*tensors);
  ASSERT_FALSE(model.ok());
  const std::string& msg = model.status().message();
  EXPECT_NE(msg.find(name), std::string::npos) << msg;
  EXPECT_NE(msg.find("[32, 128]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[64, 64]"), std::string::npos) << msg;
}

TEST_F(LoadErrorTest, ByteSizeMismatch) {
  auto tensors = testing::MakeRandomTensors(cfg_, 1);
  const std::string name = "language_model.model.norm.weight";
  tensors->views.at(name).nbytes -= 2;
  auto model = Load(*tensors);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(name), std::string::npos) << model.status().message();
}

}  // namespace
}  // namespace k3::model
