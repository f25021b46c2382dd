// k3 weights' library: sync of a generated sharded checkpoint local -> s3rver -> local (byte-identical,
// a second sync transfers nothing) and local -> s3rver -> azurite -> local, a sync stopped half way
// resumes with only the rest (measured in bytes; files, S3 multipart, Azure blocks), and verify finds
// truncated, changed and inconsistent files and unfinished copies.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/base/file.h"
#include "src/io/checkpoint.h"
#include "src/storage/azure_store.h"
#include "src/storage/file_store.h"
#include "src/storage/s3_store.h"
#include "src/storage/testing/azurite_process.h"
#include "src/storage/testing/s3rver_process.h"
#include "src/weights/manifest.h"
#include "src/weights/sync.h"
#include "src/weights/transfer_progress.h"
#include "src/weights/verify.h"

namespace k3::weights {
namespace {

namespace fs = std::filesystem;
using storage::AzureStore;
using storage::FileStore;
using storage::S3Store;
using storage::testing::AzuriteProcess;
using storage::testing::S3rverProcess;

// A deterministic checkpoint: two shards of f32 tensors, the index, a config.json.
void WriteCheckpoint(const std::string& dir, int64_t rows) {
  io::ShardedCheckpointWriter writer(dir, static_cast<uint64_t>(rows) * 64 * 4 * 2);
  uint32_t x = 7;
  for (int t = 0; t < 4; ++t) {
    io::TensorToWrite tensor;
    tensor.name = "layers." + std::to_string(t) + ".weight";
    tensor.dtype = io::DType::kF32;
    tensor.shape = {rows, 64};
    tensor.data.resize(static_cast<size_t>(rows) * 64 * 4);
    for (uint8_t& b : tensor.data) {
      x = x * 1664525u + 1013904223u;
      b = static_cast<uint8_t>(x >> 24);
    }
    ASSERT_TRUE(writer.Add(std::move(tensor)).ok());
  }
  ASSERT_TRUE(writer.Finish().ok());
  std::ofstream(dir + "/config.json") << "{\"model_type\": \"tiny\"}\n";
}

std::map<std::string, std::string> ReadTree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file())
      out[fs::relative(entry.path(), dir).string()] = *ReadFileToString(entry.path());
  }
  return out;
}

class WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("k3_weights_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "src");
    WriteCheckpoint((root_ / "src").string(), 256);  // 4 x 64 KiB tensors in 2 shards
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<S3Store> S3(const std::string& prefix, uint64_t part_size = 16 << 20) {
    storage::S3Options options;
    options.endpoint = server_->endpoint();
    options.credentials = S3rverProcess::Credentials();
    options.part_size = part_size;
    options.retry.base_delay = std::chrono::milliseconds(5);
    auto store = S3Store::Create(*storage::ParseObjectUri("s3://weights/" + prefix), options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(store).value();
  }
  bool StartS3() {
    if (std::string why = S3rverProcess::Unavailable(); !why.empty()) {
      skip_ = why;
      return false;
    }
    auto server = S3rverProcess::Start({"weights"});
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return false;
    server_ = std::move(server).value();
    return true;
  }

  std::unique_ptr<AzureStore> Azure(const std::string& prefix, uint64_t block_size = 16 << 20) {
    storage::AzureOptions options;
    options.access = AzuriteProcess::SharedKeyAccess(azurite_->endpoint());
    options.block_size = block_size;
    options.retry.base_delay = std::chrono::milliseconds(5);
    auto store = AzureStore::Create(
        *storage::ParseObjectUri("az://" + std::string(storage::kAzuriteAccount) + "/weights/" + prefix),
        options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_TRUE((*store)->CreateContainer().ok());
    return std::move(store).value();
  }
  bool StartAzure() {
    if (std::string why = AzuriteProcess::Unavailable(); !why.empty()) {
      skip_ = why;
      return false;
    }
    auto server = AzuriteProcess::Start();
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return false;
    azurite_ = std::move(server).value();
    return true;
  }

  SyncOptions Options() {
    SyncOptions options;
    options.read.chunk_bytes = 16 << 10;
    options.read.concurrency = 4;
    options.read.max_inflight_bytes = 64 << 10;
    return options;
  }

  fs::path root_;
  std::unique_ptr<S3rverProcess> server_;
  std::unique_ptr<AzuriteProcess> azurite_;
  std::string skip_;
};

TEST_F(WeightsTest, LocalToS3ToLocalIsByteIdenticalAndASecondSyncTransfersNothing) {
  if (!StartS3()) GTEST_SKIP() << skip_;
  FileStore source((root_ / "src").string());
  auto s3 = S3("model");
  auto up = SyncWeights(source, *s3, Options());
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(up->files_copied, 4);  // 2 shards, the index, config.json
  uint64_t total = 0;
  for (const auto& [name, bytes] : ReadTree((root_ / "src").string())) total += bytes.size();
  EXPECT_EQ(up->bytes_transferred, total);

  auto verified = VerifyWeights(*s3, VerifyOptions{true, {}});
  ASSERT_TRUE(verified.ok());
  EXPECT_TRUE(verified->ok()) << verified->problems.front();
  EXPECT_EQ(verified->headers_checked, 2);
  EXPECT_EQ(verified->tensors_checked, 4);

  FileStore back((root_ / "back").string());
  auto down = SyncWeights(*s3, back, Options());
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  auto got = ReadTree((root_ / "back").string());
  auto want = ReadTree((root_ / "src").string());
  ASSERT_EQ(got.count(kManifestName), 1u);
  got.erase(kManifestName);
  EXPECT_TRUE(got == want) << "the files differ after local -> s3 -> local";
  EXPECT_TRUE(io::Checkpoint::Open((root_ / "back").string()).ok());

  auto again = SyncWeights(source, *s3, Options());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->bytes_transferred, 0u);
  EXPECT_EQ(again->files_skipped, 4);
}

TEST_F(WeightsTest, LocalToS3ToAzureToLocalIsByteIdenticalAndASecondSyncTransfersNothing) {
  if (!StartS3() || !StartAzure()) GTEST_SKIP() << skip_;
  FileStore source((root_ / "src").string());
  auto s3 = S3("chain");
  auto azure = Azure("chain", 64 << 10);  // the shards (128 KiB each) go up as blocks
  ASSERT_TRUE(SyncWeights(source, *s3, Options()).ok());
  auto across = SyncWeights(*s3, *azure, Options());
  ASSERT_TRUE(across.ok()) << across.status().ToString();
  EXPECT_EQ(across->files_copied, 4);
  auto verified = VerifyWeights(*azure, VerifyOptions{true, {}});
  ASSERT_TRUE(verified.ok());
  EXPECT_TRUE(verified->ok()) << verified->problems.front();
  EXPECT_EQ(verified->headers_checked, 2);

  FileStore back((root_ / "back").string());
  auto down = SyncWeights(*azure, back, Options());
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  auto got = ReadTree((root_ / "back").string());
  ASSERT_EQ(got.count(kManifestName), 1u);
  got.erase(kManifestName);
  EXPECT_TRUE(got == ReadTree((root_ / "src").string()))
      << "the files differ after local -> s3 -> az -> local";

  auto again = SyncWeights(*s3, *azure, Options());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->bytes_transferred, 0u);
  EXPECT_EQ(again->files_skipped, 4);
}

TEST_F(WeightsTest, DeleteRemovesOnlyWhatTheSourceLacksAndKeepsAFinishedCopy) {
  FileStore source((root_ / "src").string());
  FileStore destination((root_ / "dst").string());
  ASSERT_TRUE(SyncWeights(source, destination, Options()).ok());
  for (const char* extra : {"old-00001-of-00009.safetensors", "notes/readme.txt"}) {
    fs::create_directories((root_ / "dst" / extra).parent_path());
    std::ofstream(root_ / "dst" / extra) << "left over from another checkpoint";
  }

  auto keep = SyncWeights(source, destination, Options());  // without delete: extras stay, nothing moves
  ASSERT_TRUE(keep.ok()) << keep.status().ToString();
  EXPECT_EQ(keep->files_deleted, 0);
  EXPECT_EQ(keep->bytes_transferred, 0u);
  EXPECT_TRUE(fs::exists(root_ / "dst" / "notes/readme.txt"));

  SyncOptions options = Options();
  options.delete_extraneous = true;
  auto pruned = SyncWeights(source, destination, options);
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(pruned->files_deleted, 2);
  EXPECT_EQ(pruned->bytes_transferred, 0u);
  auto got = ReadTree((root_ / "dst").string());
  ASSERT_EQ(got.count(kManifestName), 1u);
  got.erase(kManifestName);
  EXPECT_TRUE(got == ReadTree((root_ / "src").string())) << "only the source's files should remain";
  auto verified = VerifyWeights(destination, VerifyOptions{true, {}});
  ASSERT_TRUE(verified.ok());
  EXPECT_TRUE(verified->ok()) << verified->problems.front();

  auto again = SyncWeights(source, destination, options);  // nothing left to delete or copy
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->files_deleted, 0);
  EXPECT_EQ(again->bytes_transferred, 0u);
}

// Stops a sync once three quarters went over (in the middle of the second shard, the files go in key
// order: config.json, shard 1, shard 2, index), then runs it again: the second run moves only the rest.
void StopHalfWayThenResume(storage::ObjectStore& source, storage::ObjectStore& destination,
                           SyncOptions options, uint64_t total, uint64_t max_lost) {
  uint64_t first_run = 0;
  options.on_progress = [&](const SyncProgress& progress) {
    first_run = progress.transferred_bytes;
    return progress.transferred_bytes < total * 3 / 4;
  };
  auto first = SyncWeights(source, destination, options);
  ASSERT_FALSE(first.ok());
  EXPECT_GE(first_run, total * 3 / 4);
  EXPECT_EQ(first.status().code(), StatusCode::kResourceExhausted) << first.status().ToString();
  auto unfinished = VerifyWeights(destination, {});
  ASSERT_TRUE(unfinished.ok());
  EXPECT_FALSE(unfinished->ok()) << "a half-written destination must not pass verify";

  options.on_progress = nullptr;
  auto second = SyncWeights(source, destination, options);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  // The second run moves the rest plus what the first could not keep (nothing for files, at most one
  // multipart part for S3): shard 1 is skipped whole, shard 2 resumed.
  EXPECT_LE(second->bytes_transferred, total - first_run + max_lost);
  EXPECT_GE(second->bytes_transferred, total - first_run);
  EXPECT_EQ(second->files_skipped, 2);  // config.json, shard 1
  EXPECT_GT(second->bytes_resumed, 0u);
  EXPECT_EQ(second->bytes_transferred + second->bytes_resumed + second->bytes_skipped, total);
  auto verified = VerifyWeights(destination, VerifyOptions{true, {}});
  ASSERT_TRUE(verified.ok());
  EXPECT_TRUE(verified->ok()) << verified->problems.front();
}

TEST_F(WeightsTest, StoppedLocalSyncResumesWithOnlyTheRest) {
  FileStore source((root_ / "src").string());
  FileStore destination((root_ / "dst").string());
  uint64_t total = 0;
  for (const auto& [name, bytes] : ReadTree((root_ / "src").string())) total += bytes.size();
  StopHalfWayThenResume(source, destination, Options(), total, 0);
  auto got = ReadTree((root_ / "dst").string());
  got.erase(kManifestName);
  EXPECT_TRUE(got == ReadTree((root_ / "src").string()));
}

TEST_F(WeightsTest, StoppedS3MultipartSyncResumesWithOnlyTheRest) {
  if (!StartS3()) GTEST_SKIP() << skip_;
  FileStore source((root_ / "src").string());
  const uint64_t part = 32 << 10;
  auto s3 = S3("resume", part);
  uint64_t total = 0;
  for (const auto& [name, bytes] : ReadTree((root_ / "src").string())) total += bytes.size();
  StopHalfWayThenResume(source, *s3, Options(), total, part);
}

TEST_F(WeightsTest, StoppedAzureBlockSyncResumesWithOnlyTheRest) {
  if (!StartAzure()) GTEST_SKIP() << skip_;
  FileStore source((root_ / "src").string());
  const uint64_t block = 32 << 10;
  auto azure = Azure("resume", block);
  uint64_t total = 0;
  for (const auto& [name, bytes] : ReadTree((root_ / "src").string())) total += bytes.size();
  StopHalfWayThenResume(source, *azure, Options(), total, block);
}

TEST_F(WeightsTest, VerifyFindsTruncatedChangedAndInconsistentFiles) {
  FileStore source((root_ / "src").string());
  const std::string dst = (root_ / "dst").string();
  FileStore destination(dst);
  ASSERT_TRUE(SyncWeights(source, destination, Options()).ok());
  ASSERT_TRUE(VerifyWeights(destination, {})->ok());

  const std::string shard = dst + "/model-00001-of-00002.safetensors";
  std::string bytes = *ReadFileToString(shard);
  // Same size, one data byte changed: only the checksum sees it.
  std::string changed = bytes;
  changed[changed.size() - 1] ^= 1;
  ASSERT_TRUE(WriteFileAtomic(shard, changed).ok());
  EXPECT_TRUE(VerifyWeights(destination, {})->ok());
  auto with_sums = VerifyWeights(destination, VerifyOptions{true, {}});
  ASSERT_FALSE(with_sums->ok());
  EXPECT_NE(with_sums->problems[0].find("SHA-256"), std::string::npos) << with_sums->problems[0];

  // Truncated: the size and the header's data offsets both give it away.
  ASSERT_TRUE(WriteFileAtomic(shard, bytes.substr(0, bytes.size() - 100)).ok());
  auto truncated = VerifyWeights(destination, {});
  ASSERT_GE(truncated->problems.size(), 2u);
  EXPECT_NE(truncated->problems[0].find("the manifest says"), std::string::npos) << truncated->problems[0];
  EXPECT_NE(truncated->problems[1].find("past the end"), std::string::npos) << truncated->problems[1];
  ASSERT_TRUE(WriteFileAtomic(shard, bytes).ok());

  // An index that names a tensor the shard lacks.
  const std::string index_path = dst + "/" + io::kCheckpointIndexName;
  const std::string index = *ReadFileToString(index_path);
  std::string bad_index = index;
  bad_index.replace(bad_index.find("layers.0.weight"), 15, "layers.9.weight");
  ASSERT_TRUE(WriteFileAtomic(index_path, bad_index).ok());
  auto inconsistent = VerifyWeights(destination, {});
  bool named = false;
  for (const std::string& problem : inconsistent->problems)
    named |= problem.find("layers.9.weight") != std::string::npos;
  EXPECT_TRUE(named);
  ASSERT_TRUE(WriteFileAtomic(index_path, index).ok());

  fs::remove(dst + "/" + kManifestName);
  auto no_manifest = VerifyWeights(destination, {});
  ASSERT_EQ(no_manifest->problems.size(), 1u);
  EXPECT_NE(no_manifest->problems[0].find("not a finished"), std::string::npos);
}

TEST(TransferProgressTest, RendersBytesRateAndEta) {
  SyncProgress progress;
  progress.total_bytes = 4 << 20;
  progress.done_bytes = 1 << 20;
  progress.transferred_bytes = 1 << 20;
  progress.files_total = 4;
  progress.files_done = 1;
  progress.current = "model-00002.safetensors";
  EXPECT_EQ(RenderTransferLine(progress, 2.0),
            "[#####---------------]  1.00 MiB / 4.00 MiB  512.00 KiB/s  ETA 0:00:06  1/4 files  "
            "model-00002.safetensors");
}

TEST(ManifestTest, RoundTripsAndRejectsMalformedInput) {
  WeightsManifest manifest;
  manifest.source = "s3://b/p";
  manifest.files = {{"a", 3, std::string(64, 'a'), "etag"}};
  auto parsed = ParseManifest(ManifestToJson(manifest), "m");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->files[0].size, 3u);
  EXPECT_EQ(parsed->source, "s3://b/p");
  for (const char* bad :
       {"", "[]", "{\"format\": \"x\"}", "{\"format\": \"k3-weights-manifest/1\", \"files\": [{}]}",
        "{\"format\": \"k3-weights-manifest/1\", \"files\": [{\"path\": \"a\", \"size\": -1, "
        "\"sha256\": \"\"}]}"}) {
    EXPECT_EQ(ParseManifest(bad, "m").status().code(), StatusCode::kDataLoss) << bad;
  }
}

}  // namespace
}  // namespace k3::weights
