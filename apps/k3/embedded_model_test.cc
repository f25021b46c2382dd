// Tests of full generated checkpoints and the embedded model: the tokenizer files match the model's
// vocabulary and special ids, the cache directory is generated once and reused, racing processes
// (threads here) end up with one complete directory, and a damaged cache directory is reported.
#include "apps/k3/embedded_model.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/file.h"
#include "src/io/checkpoint.h"
#include "src/io/model_config.h"
#include "src/model/generator.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::app {
namespace {

namespace fs = std::filesystem;

class EmbeddedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("k3_embedded_model_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    const char* old = std::getenv("XDG_CACHE_HOME");
    had_cache_home_ = old != nullptr;
    if (had_cache_home_) old_cache_home_ = old;
    ::setenv("XDG_CACHE_HOME", (root_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    if (had_cache_home_) {
      ::setenv("XDG_CACHE_HOME", old_cache_home_.c_str(), 1);
    } else {
      ::unsetenv("XDG_CACHE_HOME");
    }
    fs::remove_all(root_);
  }

  std::vector<std::string> ListDir(const fs::path& dir) {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
      names.push_back(entry.path().filename());
    return names;
  }

  fs::path root_;
  bool had_cache_home_ = false;
  std::string old_cache_home_;
};

TEST_F(EmbeddedModelTest, FullCheckpointHasATokenizerForItsVocabulary) {
  const std::string dir = (root_ / "kimi-linear").string();
  Status status = GenerateFullCheckpoint("tiny-kimi-linear", 3, dir);
  ASSERT_TRUE(status.ok()) << status.ToString();
  Result<io::ModelConfig> config = io::LoadModelConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(io::Checkpoint::Open(dir).ok());
  Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::LoadFromDirectory(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(static_cast<int64_t>(tok->vocab_size()), config->vocab_size);
  EXPECT_EQ(static_cast<int64_t>(tok->num_ranks()), config->vocab_size - 256);
  EXPECT_EQ(static_cast<int64_t>(tok->SpecialId("[BOS]").value()), config->bos_token_id);
  EXPECT_EQ(static_cast<int64_t>(tok->SpecialId("<|end_of_msg|>").value()), config->eos_token_id);
  EXPECT_EQ(static_cast<int64_t>(tok->SpecialId("[PAD]").value()), config->pad_token_id);
  // Trained merges, not just bytes: ordinary English text takes fewer tokens than bytes.
  const std::string text = "The capital of France is Paris.";
  EXPECT_LT(tok->Encode(text, tokenizer::SpecialTokens::kDisallowed).size(), text.size() * 2 / 3);
  for (const std::string& name : ListDir(root_)) EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
}

TEST_F(EmbeddedModelTest, EnsureGeneratesOnceIntoTheVersionedCacheDirectory) {
  Result<std::string> dir = EnsureEmbeddedModel();
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(
      *dir,
      (root_ / "cache" / "k3stack" / ("tiny-k3-s0-v" + std::to_string(model::kGeneratorVersion))).string());
  Result<io::ModelConfig> config = io::LoadModelConfig(*dir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(*config == model::GeneratorPresetConfig("tiny-k3").value());
  EXPECT_TRUE(tokenizer::Tokenizer::LoadFromDirectory(*dir).ok());

  // A second call reuses the directory as it is.
  const auto index_time = fs::last_write_time(fs::path(*dir) / "model.safetensors.index.json");
  Result<std::string> again = EnsureEmbeddedModel();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *dir);
  EXPECT_EQ(fs::last_write_time(fs::path(*dir) / "model.safetensors.index.json"), index_time);
  EXPECT_EQ(ListDir(root_ / "cache" / "k3stack").size(), 1u);
}

TEST_F(EmbeddedModelTest, RacingCallsAgreeOnOneCompleteDirectory) {
  std::vector<Result<std::string>> results(2, Status(StatusCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] { results[i] = EnsureEmbeddedModel(); });
  for (std::thread& t : threads) t.join();
  for (const Result<std::string>& result : results) {
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(*result, *results[0]);
  }
  EXPECT_TRUE(io::Checkpoint::Open(*results[0]).ok());
  EXPECT_EQ(ListDir(root_ / "cache" / "k3stack").size(), 1u);  // no staging directories left behind
}

TEST_F(EmbeddedModelTest, ReportsADamagedCacheDirectory) {
  const fs::path dir =
      root_ / "cache" / "k3stack" / ("tiny-k3-s0-v" + std::to_string(model::kGeneratorVersion));
  fs::create_directories(dir);
  ASSERT_TRUE(WriteFileAtomic((dir / "config.json").string(), "{}").ok());
  Result<std::string> result = EnsureEmbeddedModel();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("delete it"), std::string::npos) << result.status().ToString();
}

TEST_F(EmbeddedModelTest, UnknownPresetLeavesNothingBehind) {
  Status status = GenerateFullCheckpoint("no-such-preset", 0, (root_ / "out").string());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ListDir(root_).empty());
}

}  // namespace
}  // namespace k3::app
