// Tests of the generator presets and of GenerateCheckpoint on the tiny presets: determinism, the exact
// tensor list of ListTensors, config.json round trip, sharding and size, bf16 / MXFP4 encodings of the
// generated values, and overwriting. mini-k3 is checked by its config only (generating it takes GBs).
#include "src/model/generator.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/bf16.h"
#include "src/base/file.h"
#include "src/io/checkpoint.h"
#include "src/io/dtype.h"
#include "src/kernels/ops.h"
#include "src/model/presets.h"
#include "src/model/tensors.h"
#include "src/model/weight_init.h"

namespace k3::model {
namespace {

namespace fs = std::filesystem;

constexpr float kE2M1Magnitudes[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

float DistanceToGrid(float x) {
  float best = 1e30f;
  for (float m : kE2M1Magnitudes) best = std::min({best, std::fabs(x - m), std::fabs(x + m)});
  return best;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Bytes of all tensors of a config, as stored.
uint64_t StoredBytes(const io::ModelConfig& cfg) {
  uint64_t bytes = 0;
  for (const TensorSpec& spec : ListTensors(cfg)) {
    bytes += static_cast<uint64_t>(NumElements(spec.shape)) * io::DTypeSize(spec.dtype);
  }
  return bytes;
}

// Every regular file of a directory: name -> contents.
std::map<std::string, std::string> ReadAllFiles(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    Result<std::string> text = ReadFileToString(entry.path().string());
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    files[entry.path().filename().string()] = text.ok() ? *text : "";
  }
  return files;
}

class GeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("k3_generator_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A tiny checkpoint, generated once per (preset, seed) for the whole test binary.
  static std::string Generated(const std::string& preset, uint64_t seed) {
    static std::map<std::pair<std::string, uint64_t>, std::string> cache;
    auto key = std::make_pair(preset, seed);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    const std::string dir =
        (fs::path(::testing::TempDir()) /
         ("k3_generator_shared_" + std::to_string(::getpid()) + "_" + preset + "_" + std::to_string(seed)))
            .string();
    fs::remove_all(dir);
    Status status = GenerateCheckpoint(preset, seed, dir);
    EXPECT_TRUE(status.ok()) << status.ToString();
    cache[key] = dir;
    return dir;
  }

  static void TearDownTestSuite() {
    for (const fs::directory_entry& entry : fs::directory_iterator(::testing::TempDir())) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("k3_generator_shared_" + std::to_string(::getpid()) + "_")) {
        fs::remove_all(entry.path());
      }
    }
  }

  fs::path root_;
};

// ---- presets ---------------------------------------------------------------------------------------------

// The routed expert of each tensor name (what an expert-parallel rank streaming from a bucket skips):
// exactly the tensors of ListTensors that spell "experts.E.", and no shared-expert tensor.
TEST(TensorsTest, RoutedExpertOfTensor) {
  auto cfg = GeneratorPresetConfig("tiny-k3");
  ASSERT_TRUE(cfg.ok());
  std::map<int64_t, int> tensors_per_expert;
  int others = 0;
  for (const TensorSpec& t : ListTensors(*cfg)) {
    const int64_t e = RoutedExpertOfTensor(t.name);
    if (e < 0) {
      ++others;
      EXPECT_EQ(t.name.find(".experts."), std::string::npos) << t.name;
    } else {
      ++tensors_per_expert[e];
    }
  }
  EXPECT_GT(others, 0);
  ASSERT_EQ(static_cast<int64_t>(tensors_per_expert.size()), cfg->num_experts);
  for (const auto& [e, n] : tensors_per_expert) EXPECT_EQ(n, tensors_per_expert.begin()->second) << e;
  EXPECT_EQ(
      RoutedExpertOfTensor("language_model.model.layers.1.block_sparse_moe.experts.12.w2.weight_packed"), 12);
  EXPECT_EQ(RoutedExpertOfTensor("model.layers.1.block_sparse_moe.shared_experts.down_proj.weight"), -1);
  EXPECT_EQ(RoutedExpertOfTensor("model.layers.1.block_sparse_moe.experts..w2"), -1);
  EXPECT_EQ(RoutedExpertOfTensor("model.layers.1.block_sparse_moe.experts.3"), -1);
}

TEST(GeneratorPresetTest, NamesAndUnknownPreset) {
  EXPECT_EQ(GeneratorPresetNames(), (std::vector<std::string>{"tiny-k3", "tiny-kimi-linear", "mini-k3"}));
  Result<io::ModelConfig> unknown = GeneratorPresetConfig("huge-k3");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("tiny-k3"), std::string::npos) << unknown.status().message();
  EXPECT_FALSE(GenerateCheckpoint("huge-k3", 0, ::testing::TempDir() + "/never").ok());
}

TEST(GeneratorPresetTest, EveryPresetSurvivesConfigJson) {
  for (const std::string& name : GeneratorPresetNames()) {
    SCOPED_TRACE(name);
    Result<io::ModelConfig> cfg = GeneratorPresetConfig(name);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    Result<io::ModelConfig> parsed = io::ParseModelConfig(io::ModelConfigToJson(*cfg).dump(), "config.json");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_TRUE(*parsed == *cfg);
  }
}

TEST(GeneratorPresetTest, PresetsFollowTheK3LayerAndVocabularyRules) {
  for (const std::string& name : GeneratorPresetNames()) {
    SCOPED_TRACE(name);
    const io::ModelConfig cfg = GeneratorPresetConfig(name).value();
    // MLA: every 4th layer (1-based) and the last one; at least two of them.
    std::vector<int64_t> mla;
    for (int64_t layer = 1; layer <= cfg.num_layers; ++layer) {
      if (layer % 4 == 0 || layer == cfg.num_layers) mla.push_back(layer);
      EXPECT_EQ(cfg.LayerAttention(layer - 1), layer % 4 == 0 || layer == cfg.num_layers
                                                   ? io::AttentionKind::kMla
                                                   : io::AttentionKind::kKda);
      EXPECT_EQ(cfg.LayerFfn(layer - 1), layer == 1 ? io::FfnKind::kDense : io::FfnKind::kMoe);
    }
    EXPECT_EQ(cfg.full_attn_layers, mla);
    EXPECT_GE(cfg.num_mla_layers(), 2);
    // Specials after the ranks, at K3's offsets.
    const int64_t first_special = cfg.vocab_size - 256;
    EXPECT_EQ(cfg.bos_token_id, first_special);
    EXPECT_EQ(cfg.eos_token_id, first_special + 2);
    EXPECT_EQ(cfg.pad_token_id, cfg.vocab_size - 1);
    if (cfg.experts_mxfp4) {
      EXPECT_EQ(cfg.expert_io_dim() % 32, 0);
      EXPECT_EQ(cfg.moe_intermediate_size % 32, 0);
    }
  }
}

TEST(GeneratorPresetTest, TinyK3HasEveryK3Feature) {
  const io::ModelConfig cfg = GeneratorPresetConfig("tiny-k3").value();
  EXPECT_EQ(cfg.family, io::ModelFamily::kKimiK3);
  EXPECT_EQ(cfg.tensor_prefix, "language_model.");
  EXPECT_EQ(cfg.activation, io::Activation::kSitu);
  EXPECT_EQ(cfg.vocab_size, 1024);
  EXPECT_TRUE(cfg.kda_full_rank_gate);
  EXPECT_TRUE(cfg.kda_has_gate_lower_bound);
  EXPECT_EQ(cfg.kda_gate_lower_bound, -5.0f);
  EXPECT_GT(cfg.q_lora_rank, 0);
  EXPECT_TRUE(cfg.mla_use_output_gate);
  EXPECT_GT(cfg.routed_expert_hidden_size, 0);
  EXPECT_LT(cfg.routed_expert_hidden_size, cfg.hidden_size);
  EXPECT_TRUE(cfg.latent_moe_use_norm);
  EXPECT_GT(cfg.num_shared_experts, 0);
  EXPECT_TRUE(cfg.experts_mxfp4);
  ASSERT_TRUE(cfg.has_attn_res());
  EXPECT_GE(cfg.num_layers / cfg.attn_res_block_size, 3);  // several blocks freeze
  EXPECT_GE(cfg.max_position_embeddings, 8192);
}

TEST(GeneratorPresetTest, TinyKimiLinearIsTheKimiLinearVariant) {
  const io::ModelConfig cfg = GeneratorPresetConfig("tiny-kimi-linear").value();
  EXPECT_EQ(cfg.family, io::ModelFamily::kKimiLinear);
  EXPECT_EQ(cfg.tensor_prefix, "");
  EXPECT_EQ(cfg.activation, io::Activation::kSilu);
  EXPECT_EQ(cfg.vocab_size, 1024);
  EXPECT_FALSE(cfg.experts_mxfp4);
  EXPECT_EQ(cfg.routed_expert_hidden_size, 0);
  EXPECT_FALSE(cfg.kda_full_rank_gate);
  EXPECT_FALSE(cfg.kda_has_gate_lower_bound);
  EXPECT_EQ(cfg.q_lora_rank, 0);
  EXPECT_FALSE(cfg.mla_use_output_gate);
  EXPECT_FALSE(cfg.has_attn_res());
  EXPECT_NE(cfg.routed_scaling_factor, 1.0f);
}

TEST(GeneratorPresetTest, MiniK3IsAtLeastTwoGigabytes) {
  const io::ModelConfig cfg = GeneratorPresetConfig("mini-k3").value();
  EXPECT_EQ(cfg.family, io::ModelFamily::kKimiK3);
  EXPECT_TRUE(cfg.experts_mxfp4);
  EXPECT_GE(cfg.num_experts, 64);
  EXPECT_EQ(cfg.vocab_size, 32768);
  EXPECT_GE(StoredBytes(cfg), 2'000'000'000u);
}

// ---- generated checkpoints
// ---------------------------------------------------------------------------------

TEST_F(GeneratorTest, SameSeedGivesIdenticalFilesAndAnotherSeedDifferentOnes) {
  const std::string again = (root_ / "again").string();
  ASSERT_TRUE(GenerateCheckpoint("tiny-k3", 0, again).ok());
  const auto first = ReadAllFiles(Generated("tiny-k3", 0));
  const auto second = ReadAllFiles(again);
  ASSERT_EQ(first.size(), second.size());
  for (const auto& [name, bytes] : first) {
    ASSERT_TRUE(second.count(name)) << name;
    EXPECT_TRUE(bytes == second.at(name)) << name << " differs between two runs with seed 0";
  }
  const auto other = ReadAllFiles(Generated("tiny-k3", 1));
  EXPECT_EQ(other.at("config.json"), first.at("config.json"));
  ASSERT_EQ(other.size(), first.size());
  int shards = 0;
  for (const auto& [name, bytes] : first) {
    if (!name.ends_with(".safetensors")) continue;
    ++shards;
    ASSERT_TRUE(other.count(name)) << name;
    EXPECT_FALSE(bytes == other.at(name)) << name << " is the same for seeds 0 and 1";
  }
  EXPECT_GE(shards, 2);
}

TEST_F(GeneratorTest, CheckpointHoldsExactlyTheListedTensors) {
  for (const std::string preset : {"tiny-k3", "tiny-kimi-linear"}) {
    SCOPED_TRACE(preset);
    const std::string dir = Generated(preset, 0);
    const io::ModelConfig cfg = GeneratorPresetConfig(preset).value();
    Result<std::unique_ptr<io::Checkpoint>> ckpt = io::Checkpoint::Open(dir);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
    std::vector<TensorSpec> specs = ListTensors(cfg);
    const std::vector<TensorSpec> vision = ListVisionTensors(cfg);
    EXPECT_EQ(vision.empty(), preset == "tiny-kimi-linear");  // Kimi Linear has no vision tower
    specs.insert(specs.end(), vision.begin(), vision.end());
    EXPECT_EQ((*ckpt)->tensors().size(), specs.size());
    for (const TensorSpec& spec : specs) {
      Result<const io::TensorView*> view = (*ckpt)->Get(spec.name, spec.dtype, spec.shape);
      EXPECT_TRUE(view.ok()) << view.status().ToString();
    }
  }
}

TEST_F(GeneratorTest, ConfigJsonRoundTripsToThePreset) {
  for (const std::string preset : {"tiny-k3", "tiny-kimi-linear"}) {
    SCOPED_TRACE(preset);
    Result<io::ModelConfig> loaded = io::LoadModelConfig(Generated(preset, 0));
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EXPECT_TRUE(*loaded == GeneratorPresetConfig(preset).value());
  }
}

TEST_F(GeneratorTest, TinyPresetsAreShardedAndSmall) {
  for (const std::string preset : {"tiny-k3", "tiny-kimi-linear"}) {
    SCOPED_TRACE(preset);
    const std::string dir = Generated(preset, 0);
    int shards = 0;
    uint64_t bytes = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      shards += name.starts_with("model-") && name.ends_with(".safetensors");
      bytes += entry.file_size();
    }
    EXPECT_GE(shards, 2);
    EXPECT_TRUE(fs::exists(fs::path(dir) / "model.safetensors.index.json"));
    EXPECT_LT(bytes, 8u << 20);
    EXPECT_GT(bytes, 1u << 20);
  }
}

TEST_F(GeneratorTest, Bf16AndF32TensorsHoldTheRoundedGeneratedValues) {
  const io::ModelConfig cfg = GeneratorPresetConfig("tiny-k3").value();
  auto ckpt = io::Checkpoint::Open(Generated("tiny-k3", 0));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  int checked_bf16 = 0, checked_f32 = 0;
  std::vector<TensorSpec> specs = ListTensors(cfg);
  for (TensorSpec& spec : ListVisionTensors(cfg)) specs.push_back(std::move(spec));
  for (const TensorSpec& spec : specs) {
    if (spec.dtype != io::DType::kBF16 && spec.dtype != io::DType::kF32) continue;
    const io::TensorView* view = (*ckpt)->Find(spec.name);
    ASSERT_NE(view, nullptr) << spec.name;
    const int64_t n = LogicalRowLength(spec), rows = LogicalRowCount(spec);
    std::vector<float> row(n);
    for (int64_t r : {int64_t{0}, rows - 1}) {
      InitRow(cfg, spec, TensorSeed(0, spec.name), r, row.data());
      for (int64_t i = 0; i < n; ++i) {
        float stored;
        if (spec.dtype == io::DType::kBF16) {
          bf16 raw;
          std::memcpy(&raw.bits, view->data + 2 * (r * n + i), 2);
          stored = Bf16ToFloat(raw);
          EXPECT_EQ(stored, RoundBf16(row[i])) << spec.name << " [" << r << ", " << i << "]";
        } else {
          std::memcpy(&stored, view->data + 4 * (r * n + i), 4);
          EXPECT_EQ(stored, row[i]) << spec.name << " [" << r << ", " << i << "]";
        }
        ASSERT_TRUE(std::isfinite(stored));
      }
    }
    (spec.dtype == io::DType::kBF16 ? checked_bf16 : checked_f32)++;
  }
  EXPECT_GT(checked_bf16, 50);
  EXPECT_GT(checked_f32, 10);
}

TEST_F(GeneratorTest, Mxfp4ExpertsDequantiseToTheNearestE2M1OfTheGeneratedMatrix) {
  const io::ModelConfig cfg = GeneratorPresetConfig("tiny-k3").value();
  auto ckpt = io::Checkpoint::Open(Generated("tiny-k3", 0));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  const std::vector<TensorSpec> specs = ListTensors(cfg);
  int checked = 0;
  for (size_t t = 0; t + 1 < specs.size(); ++t) {
    const TensorSpec& spec = specs[t];
    if (spec.init != InitKind::kMxfp4Packed) continue;
    // Check every 7th expert matrix (all three of w1/w3/w2 come up), three rows each.
    if (checked++ % 7 != 0) continue;
    const io::TensorView* packed = (*ckpt)->Find(spec.name);
    const io::TensorView* scales = (*ckpt)->Find(specs[t + 1].name);
    ASSERT_NE(packed, nullptr);
    ASSERT_NE(scales, nullptr);
    const int64_t in = spec.fan_in, rows = spec.shape[0];
    std::vector<float> logical(in), dequantised(in);
    for (int64_t r : {int64_t{0}, rows / 2, rows - 1}) {
      InitRow(cfg, spec, TensorSeed(0, spec.name), r, logical.data());
      kernels::DequantMxfp4Row(packed->data + r * (in / 2), scales->data + r * (in / 32), in,
                               dequantised.data());
      for (int64_t g = 0; g < in / 32; ++g) {
        const float scale = kernels::E8M0ToFloat(scales->data[r * (in / 32) + g]);
        float max_abs = 0;
        for (int64_t i = 32 * g; i < 32 * g + 32; ++i) max_abs = std::max(max_abs, std::fabs(logical[i]));
        EXPECT_LE(max_abs / scale, 6.0f);
        EXPECT_GT(max_abs / scale, 3.0f);  // the smallest scale that fits
        for (int64_t i = 32 * g; i < 32 * g + 32; ++i) {
          EXPECT_EQ(std::fabs(logical[i] / scale - dequantised[i] / scale),
                    DistanceToGrid(logical[i] / scale))
              << spec.name << " [" << r << ", " << i << "]";
        }
      }
    }
  }
  EXPECT_GT(checked, 20);
}

TEST_F(GeneratorTest, OverwritesAnOldCheckpointAndLeavesNoStagingDirectory) {
  const std::string dir = (root_ / "out").string();
  ASSERT_TRUE(GenerateCheckpoint("tiny-kimi-linear", 0, dir).ok());
  // A stale shard of some other checkpoint and an unrelated file.
  ASSERT_TRUE(WriteFileAtomic(dir + "/model-00009-of-00009.safetensors", "stale").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/notes.txt", "keep me").ok());
  ASSERT_TRUE(GenerateCheckpoint("tiny-k3", 0, dir + "/").ok());
  EXPECT_FALSE(fs::exists(dir + "/model-00009-of-00009.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
  Result<io::ModelConfig> loaded = io::LoadModelConfig(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->family, io::ModelFamily::kKimiK3);
  EXPECT_TRUE(io::Checkpoint::Open(dir).ok());
  const auto fresh = ReadAllFiles(Generated("tiny-k3", 0));
  const auto overwritten = ReadAllFiles(dir);
  for (const auto& [name, bytes] : fresh) EXPECT_TRUE(overwritten.at(name) == bytes) << name;
  for (const fs::directory_entry& entry : fs::directory_iterator(root_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  }
}

TEST_F(GeneratorTest, RefusesAFileAsTheOutputDirectory) {
  const std::string file = (root_ / "a-file").string();
  ASSERT_TRUE(WriteFileAtomic(file, "x").ok());
  Status status = GenerateCheckpoint("tiny-k3", 0, file);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("not a directory"), std::string::npos) << status.ToString();
  for (const fs::directory_entry& entry : fs::directory_iterator(root_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace k3::model
