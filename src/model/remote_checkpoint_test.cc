// LoadModelFromStore (remote_checkpoint.h): a random tiny-k3 checkpoint (plus tokenizer files) read
// through an ObjectStore gives exactly the logits of Model::Load on the same directory, over local files
// and over a real s3rver (skipped with the reason when s3rver is not installed); a missing shard and a
// truncated shard are errors naming the object, never a crash.
#include "src/model/remote_checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "src/base/check.h"
#include "src/base/file.h"
#include "src/model/sequences.h"
#include "src/model/testing/random_model.h"
#include "src/storage/file_store.h"
#include "src/storage/s3_store.h"
#include "src/storage/testing/s3rver_process.h"
#include "src/weights/manifest.h"

namespace k3::model {
namespace {

namespace fs = std::filesystem;

std::vector<float> PromptLogits(Model& model) {
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 9; ++i)
    prompt.push_back((i * 37 + 5) % static_cast<int32_t>(model.config().vocab_size));
  Sequences seqs(model);
  const int32_t state = seqs.New();
  SequenceBatchItem item{state, std::span<const int32_t>(prompt), true};
  ForwardOutput out;
  K3_CHECK_OK(seqs.Forward(std::span<const SequenceBatchItem>(&item, 1), &out));
  return out.logits;
}

class RemoteCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("k3_remote_checkpoint_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_TRUE(testing::WriteRandomCheckpoint(testing::TinyK3Config(), 11, dir_.string()).ok());
    std::ofstream(dir_ / "tiktoken.model") << "YQ== 0\n";
    std::ofstream(dir_ / "tokenizer_config.json") << "{}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  RemoteLoadOptions Options() const {
    RemoteLoadOptions options;
    options.concurrency = 3;
    options.chunk_bytes = 64 << 10;  // many ranged requests per shard
    options.max_inflight_bytes = 256 << 10;
    return options;
  }

  // Loads through `store` and compares logits with Model::Load of the directory.
  void ExpectSameAsLocal(storage::ObjectStore& store) {
    ThreadPool pool(2);
    auto remote = LoadModelFromStore(store, &pool, {}, Options());
    ASSERT_TRUE(remote.ok()) << remote.status().ToString();
    EXPECT_EQ(remote->files.tokenizer_model, "YQ== 0\n");
    EXPECT_EQ(remote->files.tokenizer_config, "{}\n");
    EXPECT_EQ(remote->files.generation_config, "");
    auto local = Model::Load(dir_.string(), &pool);
    ASSERT_TRUE(local.ok()) << local.status().ToString();
    EXPECT_EQ(PromptLogits(*remote->model), PromptLogits(**local));
  }

  fs::path dir_;
};

TEST_F(RemoteCheckpointTest, FileStoreGivesTheLogitsOfALocalLoad) {
  storage::FileStore store(dir_.string());
  ExpectSameAsLocal(store);
}

TEST_F(RemoteCheckpointTest, S3rverGivesTheLogitsOfALocalLoad) {
  using storage::testing::S3rverProcess;
  if (std::string why = S3rverProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto server = S3rverProcess::Start({"models"});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  storage::S3Options options;
  options.endpoint = (*server)->endpoint();
  options.credentials = S3rverProcess::Credentials();
  auto store = storage::S3Store::Create(*storage::ParseObjectUri("s3://models/tiny"), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (const auto& entry : fs::directory_iterator(dir_)) {
    auto bytes = ReadFileToString(entry.path().string());
    ASSERT_TRUE(bytes.ok());
    ASSERT_TRUE((*store)
                    ->WriteAll(entry.path().filename().string(),
                               std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()))
                    .ok());
  }
  ExpectSameAsLocal(**store);
}

TEST_F(RemoteCheckpointTest, MissingShardNamesTheObject) {
  fs::remove(dir_ / "model.safetensors");
  storage::FileStore store(dir_.string());
  ThreadPool pool(1);
  auto remote = LoadModelFromStore(store, &pool, {}, Options());
  ASSERT_FALSE(remote.ok());
  EXPECT_EQ(remote.status().code(), StatusCode::kNotFound);
  EXPECT_NE(remote.status().message().find("model.safetensors: does not exist"), std::string::npos)
      << remote.status().ToString();
}

TEST_F(RemoteCheckpointTest, TruncatedShardIsAnErrorNamingIt) {
  const fs::path shard = dir_ / "model.safetensors";
  const uint64_t size = fs::file_size(shard);
  fs::resize_file(shard, size - 100);
  storage::FileStore store(dir_.string());
  ThreadPool pool(1);
  auto remote = LoadModelFromStore(store, &pool, {}, Options());
  ASSERT_FALSE(remote.ok());
  EXPECT_NE(remote.status().ToString().find("model.safetensors"), std::string::npos)
      << remote.status().ToString();

  // With a manifest the size mismatch is reported before any shard is read.
  weights::WeightsManifest manifest;
  manifest.files.push_back({"model.safetensors", size, std::string(64, '0'), ""});
  std::ofstream(dir_ / weights::kManifestName) << weights::ManifestToJson(manifest);
  remote = LoadModelFromStore(store, &pool, {}, Options());
  ASSERT_FALSE(remote.ok());
  EXPECT_EQ(remote.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(remote.status().message().find(fmt::format(
                "model.safetensors: is {} bytes, but k3-manifest.json says {}", size - 100, size)),
            std::string::npos)
      << remote.status().ToString();
}

}  // namespace
}  // namespace k3::model
