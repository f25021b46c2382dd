// FileStore: round trips, partial writes that are never visible under the final name and resume, and
// keys that would escape the root.
#include "src/storage/file_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace k3::storage {
namespace {

namespace fs = std::filesystem;

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("k3_file_store_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FileStoreTest, WriteListStatReadRoundTrip) {
  FileStore store(root_.string());
  ASSERT_TRUE(store.WriteAll("a/b.bin", Bytes("0123456789")).ok());
  ASSERT_TRUE(store.WriteAll("c.json", Bytes("{}")).ok());
  auto list = store.List("");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].key, "a/b.bin");
  EXPECT_EQ((*list)[0].size, 10u);
  EXPECT_EQ((*list)[1].key, "c.json");
  EXPECT_EQ(store.List("a/")->size(), 1u);

  auto stat = store.Stat("a/b.bin");
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->size, 10u);
  EXPECT_EQ(store.Stat("missing").status().code(), StatusCode::kNotFound);

  std::vector<uint8_t> buffer(4);
  ASSERT_TRUE(store.ReadRange("a/b.bin", 3, buffer).ok());
  EXPECT_EQ(std::string(buffer.begin(), buffer.end()), "3456");
  std::vector<uint8_t> too_far(4);
  EXPECT_EQ(store.ReadRange("a/b.bin", 8, too_far).code(), StatusCode::kDataLoss);
}

TEST_F(FileStoreTest, UncommittedWriteIsHiddenAndResumes) {
  FileStore store(root_.string());
  {
    auto writer = store.OpenWriter("big.bin", WriteOptions{10, true});
    ASSERT_TRUE(writer.ok());
    EXPECT_EQ((*writer)->resume_offset(), 0u);
    ASSERT_TRUE((*writer)->Append(Bytes("01234")).ok());
    // Dropped without Commit: a crash half way.
  }
  EXPECT_FALSE(fs::exists(root_ / "big.bin"));
  EXPECT_TRUE(store.List("")->empty()) << "the partial file must not be listed";

  auto writer = store.OpenWriter("big.bin", WriteOptions{10, true});
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ((*writer)->resume_offset(), 5u);
  ASSERT_TRUE((*writer)->Append(Bytes("56789")).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_EQ(*store.ReadAll("big.bin"), "0123456789");
  EXPECT_FALSE(fs::exists(root_ / "big.bin.k3partial"));

  // resume = false starts over.
  auto fresh = store.OpenWriter("x.bin", WriteOptions{10, false});
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)->resume_offset(), 0u);
}

TEST_F(FileStoreTest, KeysThatEscapeTheRootAreRefused) {
  FileStore store(root_.string());
  for (const char* key : {"../x", "/etc/passwd", "a//b", "a/./b", "a/..", ""}) {
    EXPECT_EQ(store.WriteAll(key, Bytes("x")).code(), StatusCode::kInvalidArgument) << key;
    EXPECT_FALSE(store.Stat(key).ok()) << key;
  }
}

TEST_F(FileStoreTest, ListingAMissingDirectoryIsNotFound) {
  FileStore store((root_ / "nope").string());
  EXPECT_EQ(store.List("").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace k3::storage
