// ReadRangesParallel / StreamObject over a FileStore wrapped in a store that counts bytes in flight and
// can fail one read: order, completeness, the in-flight bound, and error propagation.
#include "src/storage/range_fetcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "src/storage/file_store.h"

namespace k3::storage {
namespace {

namespace fs = std::filesystem;

// Delegates to a FileStore; records the most bytes ever requested at once; fails the read at fail_offset.
class InstrumentedStore : public FileStore {
 public:
  using FileStore::FileStore;
  Status ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) override {
    const uint64_t now = (in_flight += dst.size());
    uint64_t seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    Status status = offset == fail_offset ? IoError("injected failure at {}", offset)
                                          : FileStore::ReadRange(key, offset, dst);
    in_flight -= dst.size();
    return status;
  }
  std::atomic<uint64_t> in_flight{0}, max_in_flight{0};
  uint64_t fail_offset = UINT64_MAX;
};

class RangeFetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("k3_range_fetcher_test_" + std::to_string(::getpid()));
    fs::create_directories(root_);
    data_.resize(1000003);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    FileStore store(root_.string());
    ASSERT_TRUE(store.WriteAll("blob", data_).ok());
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
  std::vector<uint8_t> data_;
};

TEST_F(RangeFetcherTest, StreamDeliversEveryByteInOrderWithinTheBudget) {
  InstrumentedStore store(root_.string());
  ParallelReadOptions options;
  options.concurrency = 4;
  options.chunk_bytes = 10000;
  options.max_inflight_bytes = 30000;
  std::vector<uint8_t> got;
  uint64_t expected_offset = 17;
  ASSERT_TRUE(StreamObject(store, "blob", 17, data_.size(), options,
                           [&](uint64_t offset, std::span<const uint8_t> d) {
                             EXPECT_EQ(offset, expected_offset);
                             expected_offset += d.size();
                             got.insert(got.end(), d.begin(), d.end());
                             return OkStatus();
                           })
                  .ok());
  EXPECT_EQ(got, std::vector<uint8_t>(data_.begin() + 17, data_.end()));
  EXPECT_LE(store.max_in_flight.load(), options.max_inflight_bytes);
  EXPECT_GT(store.max_in_flight.load(), options.chunk_bytes) << "reads should overlap";
}

TEST_F(RangeFetcherTest, ReadRangesFillsEveryDestination) {
  InstrumentedStore store(root_.string());
  std::vector<uint8_t> a(300000), b(5), c(0);
  std::vector<RangeRead> ranges = {{"blob", 1, a}, {"blob", 999998, b}, {"blob", 0, c}};
  ParallelReadOptions options;
  options.chunk_bytes = 65536;
  options.concurrency = 3;
  ASSERT_TRUE(ReadRangesParallel(store, ranges, options).ok());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data_.begin() + 1));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), data_.begin() + 999998));
  EXPECT_LE(store.max_in_flight.load(), 3u * 65536u);
}

TEST_F(RangeFetcherTest, ErrorsStopTheStream) {
  InstrumentedStore store(root_.string());
  store.fail_offset = 50000;
  ParallelReadOptions options;
  options.chunk_bytes = 10000;
  size_t delivered = 0;
  Status status =
      StreamObject(store, "blob", 0, data_.size(), options, [&](uint64_t, std::span<const uint8_t> d) {
        delivered += d.size();
        return OkStatus();
      });
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("injected failure at 50000"), std::string::npos);
  EXPECT_LE(delivered, 50000u);

  // The consumer's error stops it too.
  store.fail_offset = UINT64_MAX;
  Status consumer =
      StreamObject(store, "blob", 0, data_.size(), options, [&](uint64_t offset, std::span<const uint8_t>) {
        return offset >= 20000 ? DataLoss("disk full") : OkStatus();
      });
  EXPECT_EQ(consumer.code(), StatusCode::kDataLoss);

  std::vector<uint8_t> a(100000);
  store.fail_offset = 40000;
  std::vector<RangeRead> ranges = {{"blob", 0, a}};
  EXPECT_EQ(ReadRangesParallel(store, ranges, options).code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace k3::storage
