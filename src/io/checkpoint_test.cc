// Tests for Checkpoint (single file and index + shards) and ShardedCheckpointWriter: round trips, exact
// dtype/shape checks, and one test per broken-checkpoint case (missing shard, stale index, shard names
// escaping the directory, a tensor in two shards, truncated shard, ...).
#include "src/io/checkpoint.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/file.h"

namespace k3::io {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/k3_checkpoint_test_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static TensorToWrite Tensor(std::string name, DType dtype, std::vector<int64_t> shape, uint8_t seed = 1) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    std::vector<uint8_t> data(static_cast<size_t>(numel) * DTypeSize(dtype));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(seed * 31 + i);
    return TensorToWrite{std::move(name), dtype, std::move(shape), std::move(data)};
  }

  void WriteIndex(const json& weight_map) {
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/model.safetensors.index.json",
                                json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump())
                    .ok());
  }

  void WriteShard(const std::string& name, const std::vector<TensorToWrite>& tensors) {
    ASSERT_TRUE(WriteSafetensors(dir_ + "/" + name, tensors).ok());
  }

  void ExpectOpenError(StatusCode code, const std::vector<std::string>& parts) {
    auto ckpt = Checkpoint::Open(dir_);
    ASSERT_FALSE(ckpt.ok());
    EXPECT_EQ(ckpt.status().code(), code) << ckpt.status().ToString();
    for (const std::string& part : parts) EXPECT_THAT(ckpt.status().message(), HasSubstr(part));
  }

  std::string dir_;
};

TEST_F(CheckpointTest, OpensSingleFile) {
  const std::vector<TensorToWrite> tensors = {Tensor("model.norm.weight", DType::kBF16, {64}),
                                              Tensor("model.embed_tokens.weight", DType::kBF16, {10, 64}, 2)};
  WriteShard("model.safetensors", tensors);
  auto ckpt = Checkpoint::Open(dir_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ((*ckpt)->dir(), dir_);
  EXPECT_EQ((*ckpt)->tensors().size(), 2u);
  auto norm = (*ckpt)->Get("model.norm.weight", DType::kBF16, {64});
  ASSERT_TRUE(norm.ok()) << norm.status().ToString();
  EXPECT_EQ(std::memcmp((*norm)->data, tensors[0].data.data(), 128), 0);
  EXPECT_EQ((*ckpt)->total_bytes(), 128u + 1280u);
  EXPECT_EQ((*ckpt)->file_bytes(), fs::file_size(dir_ + "/model.safetensors"));
}

TEST_F(CheckpointTest, ShardedWriterRoundTrip) {
  std::vector<TensorToWrite> tensors;
  for (int i = 0; i < 7; ++i)
    tensors.push_back(Tensor(fmt::format("layers.{}.w", i), DType::kF32, {10, 10}, i));
  tensors.push_back(Tensor("huge", DType::kBF16, {40, 40}, 9));  // 3200 bytes > the shard limit: own shard
  tensors.push_back(Tensor("bias", DType::kU8, {3}, 4));
  ShardedCheckpointWriter writer(dir_ + "/out", 1000);
  for (const TensorToWrite& t : tensors) ASSERT_TRUE(writer.Add(t).ok());
  ASSERT_TRUE(writer.Finish().ok());

  // 400-byte tensors: two per shard (800), then the huge one alone, then the rest.
  const std::string out = dir_ + "/out";
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(out)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files,
            (std::vector<std::string>{"model-00001-of-00006.safetensors", "model-00002-of-00006.safetensors",
                                      "model-00003-of-00006.safetensors", "model-00004-of-00006.safetensors",
                                      "model-00005-of-00006.safetensors", "model-00006-of-00006.safetensors",
                                      "model.safetensors.index.json"}));
  auto index_text = ReadFileToString(out + "/model.safetensors.index.json");
  ASSERT_TRUE(index_text.ok());
  const json index = json::parse(*index_text);
  EXPECT_EQ(index["metadata"]["total_size"], 7 * 400 + 3200 + 3);
  EXPECT_EQ(index["weight_map"]["huge"], "model-00005-of-00006.safetensors");
  EXPECT_EQ(index["weight_map"]["layers.0.w"], "model-00001-of-00006.safetensors");
  EXPECT_EQ(index["weight_map"]["layers.6.w"], "model-00004-of-00006.safetensors");

  auto ckpt = Checkpoint::Open(out);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ((*ckpt)->tensors().size(), tensors.size());
  EXPECT_EQ((*ckpt)->total_bytes(), 7u * 400 + 3200 + 3);
  uint64_t file_bytes = 0;
  for (const std::string& f : files) {
    if (f.ends_with(".safetensors")) file_bytes += fs::file_size(out + "/" + f);
  }
  EXPECT_EQ((*ckpt)->file_bytes(), file_bytes);
  for (const TensorToWrite& t : tensors) {
    auto view = (*ckpt)->Get(t.name, t.dtype, t.shape);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    ASSERT_EQ((*view)->nbytes, t.data.size());
    EXPECT_EQ(std::memcmp((*view)->data, t.data.data(), t.data.size()), 0) << t.name;
  }
  auto shard = SafetensorsFile::Open(out + "/model-00001-of-00006.safetensors");
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ((*shard)->metadata().at("format"), "pt");
}

TEST_F(CheckpointTest, WriterWithoutFinishLeavesNoCheckpoint) {
  WriteShard("model.safetensors", {Tensor("old", DType::kU8, {1})});
  WriteIndex({{"old", "model.safetensors"}});
  {
    ShardedCheckpointWriter writer(dir_, 100);
    ASSERT_TRUE(writer.Add(Tensor("a", DType::kF32, {20})).ok());
    ASSERT_TRUE(writer.Add(Tensor("b", DType::kF32, {20})).ok());  // flushes shard 1
  }
  EXPECT_FALSE(fs::exists(dir_ + "/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir_ + "/model.safetensors"));
  ExpectOpenError(StatusCode::kNotFound, {"neither model.safetensors.index.json nor model.safetensors"});
}

TEST_F(CheckpointTest, WriterRejectsMisuse) {
  ShardedCheckpointWriter writer(dir_, 1 << 20);
  ASSERT_TRUE(writer.Add(Tensor("a", DType::kF32, {2})).ok());
  Status dup = writer.Add(Tensor("a", DType::kF32, {2}));
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(dup.message(), HasSubstr("'a' added twice"));
  TensorToWrite bad = Tensor("b", DType::kF32, {2});
  bad.data.resize(7);
  EXPECT_THAT(writer.Add(bad).message(), HasSubstr("needs 8 bytes but holds 7"));
  ASSERT_TRUE(writer.Finish().ok());
  EXPECT_FALSE(writer.Finish().ok());
  EXPECT_FALSE(writer.Add(Tensor("c", DType::kF32, {2})).ok());
  auto ckpt = Checkpoint::Open(dir_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ((*ckpt)->tensors().size(), 1u);
}

TEST_F(CheckpointTest, EmptyWriterGivesEmptyCheckpoint) {
  ShardedCheckpointWriter writer(dir_, 100);
  ASSERT_TRUE(writer.Finish().ok());
  auto ckpt = Checkpoint::Open(dir_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  EXPECT_EQ((*ckpt)->tensors().size(), 0u);
  EXPECT_EQ((*ckpt)->total_bytes(), 0u);
}

TEST_F(CheckpointTest, GetChecksDTypeAndShapeExactly) {
  WriteShard("model-00001-of-00003.safetensors", {Tensor("a", DType::kBF16, {2})});
  WriteShard("model-00002-of-00003.safetensors",
             {Tensor("language_model.model.norm.weight", DType::kF32, {64})});
  WriteShard("model-00003-of-00003.safetensors", {Tensor("c", DType::kBF16, {4, 8})});
  WriteIndex({{"a", "model-00001-of-00003.safetensors"},
              {"language_model.model.norm.weight", "model-00002-of-00003.safetensors"},
              {"c", "model-00003-of-00003.safetensors"}});
  auto ckpt = Checkpoint::Open(dir_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();

  auto dtype_mismatch = (*ckpt)->Get("language_model.model.norm.weight", DType::kBF16, {64});
  ASSERT_FALSE(dtype_mismatch.ok());
  EXPECT_EQ(dtype_mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(
      dtype_mismatch.status().message(),
      HasSubstr("model-00002-of-00003.safetensors: tensor 'language_model.model.norm.weight' has dtype F32 "
                "shape [64], expected BF16 [64]"));

  auto shape_mismatch = (*ckpt)->Get("c", DType::kBF16, {8, 4});
  ASSERT_FALSE(shape_mismatch.ok());
  EXPECT_THAT(
      shape_mismatch.status().message(),
      HasSubstr(
          "model-00003-of-00003.safetensors: tensor 'c' has dtype BF16 shape [4, 8], expected BF16 [8, 4]"));
  EXPECT_FALSE((*ckpt)->Get("c", DType::kBF16, {32}).ok());

  auto missing = (*ckpt)->Get("lm_head.weight", DType::kBF16, {4, 8});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("tensor 'lm_head.weight' is not in the checkpoint (3 tensors)"));
  EXPECT_EQ((*ckpt)->Find("lm_head.weight"), nullptr);
  EXPECT_NE((*ckpt)->Find("a"), nullptr);
}

TEST_F(CheckpointTest, IndexPointsAtMissingShard) {
  WriteShard("model-00001-of-00002.safetensors", {Tensor("a", DType::kU8, {2})});
  WriteIndex({{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}});
  ExpectOpenError(StatusCode::kNotFound,
                  {"model.safetensors.index.json", "tensor 'b'", "model-00002-of-00002.safetensors",
                   "does not exist", "download the missing shard"});
}

TEST_F(CheckpointTest, IndexNamesTensorTheShardLacks) {
  WriteShard("model-00001-of-00001.safetensors", {Tensor("a", DType::kU8, {2})});
  WriteIndex({{"a", "model-00001-of-00001.safetensors"}, {"b", "model-00001-of-00001.safetensors"}});
  ExpectOpenError(StatusCode::kNotFound,
                  {"tensor 'b' is mapped to model-00001-of-00001.safetensors", "does not contain it"});
}

TEST_F(CheckpointTest, TensorDefinedInTwoShards) {
  WriteShard("s1.safetensors", {Tensor("a", DType::kU8, {2}), Tensor("b", DType::kU8, {2})});
  WriteShard("s2.safetensors", {Tensor("b", DType::kU8, {2})});
  WriteIndex({{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
  ExpectOpenError(StatusCode::kDataLoss, {"tensor 'b' is defined in both s1.safetensors and s2.safetensors"});
}

TEST_F(CheckpointTest, ShardNamesMustStayInsideTheDirectory) {
  fs::create_directories(dir_ + "/sub");
  WriteShard("sub/x.safetensors", {Tensor("a", DType::kU8, {2})});
  for (const std::string& name : {std::string("../x.safetensors"), dir_ + "/sub/x.safetensors",
                                  std::string("sub/x.safetensors"), std::string(".."), std::string("")}) {
    WriteIndex({{"a", name}});
    ExpectOpenError(StatusCode::kInvalidArgument,
                    {"weight_map['a']", "not a file name inside the checkpoint"});
  }
}

TEST_F(CheckpointTest, MalformedIndex) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/model.safetensors.index.json", "{\"weight_map\": {").ok());
  ExpectOpenError(StatusCode::kDataLoss, {"model.safetensors.index.json", "not valid JSON"});
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/model.safetensors.index.json", "{\"metadata\": {}}").ok());
  ExpectOpenError(StatusCode::kDataLoss, {"'weight_map' is missing"});
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/model.safetensors.index.json", "{\"weight_map\": [1]}").ok());
  ExpectOpenError(StatusCode::kDataLoss, {"'weight_map' is a JSON array"});
  WriteIndex({{"a", 3}});
  ExpectOpenError(StatusCode::kDataLoss, {"weight_map['a'] is a JSON integer"});
}

TEST_F(CheckpointTest, TruncatedShard) {
  ShardedCheckpointWriter writer(dir_, 1000);
  ASSERT_TRUE(writer.Add(Tensor("a", DType::kF32, {200})).ok());
  ASSERT_TRUE(writer.Add(Tensor("b", DType::kF32, {200})).ok());
  ASSERT_TRUE(writer.Finish().ok());
  const std::string shard = dir_ + "/model-00002-of-00002.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 1);
  ExpectOpenError(StatusCode::kDataLoss, {shard, "tensor 'b'", "past the end of the data area"});
}

TEST_F(CheckpointTest, EmptyDirectory) {
  ExpectOpenError(StatusCode::kNotFound,
                  {dir_, "neither model.safetensors.index.json nor model.safetensors"});
  ExpectOpenError(StatusCode::kNotFound, {"k3 gen-model"});
}

}  // namespace
}  // namespace k3::io
