// Tests for src/base: Status/Result plumbing, bf16 rounding, ThreadPool coverage, file helpers.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "src/base/bf16.h"
#include "src/base/file.h"
#include "src/base/huge_pages.h"
#include "src/base/open_files.h"
#include "src/base/status.h"
#include "src/base/thread_pool.h"
#include "src/base/xml_escape.h"

namespace k3 {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("{} is odd", x);
  return x / 2;
}

Result<int> Quarter(int x) {
  K3_ASSIGN_OR_RETURN(int h, Half(x));
  K3_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, ResultPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "3 is odd");
  EXPECT_EQ(r.status().WithPrefix("f").ToString(), "InvalidArgument: f: 3 is odd");
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is exactly half-way between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(RoundBf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);
  // 1 + 3 * 2^-8 is half-way between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(RoundBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(RoundBf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isinf(RoundBf16(std::numeric_limits<float>::infinity())));
  EXPECT_EQ(RoundBf16(-0.0f), -0.0f);
}

TEST(ThreadPool, RunsEveryTaskOnce) {
  for (size_t threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 3u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      for (int rep = 0; rep < 20; ++rep) {
        pool.ParallelFor(n, [&](size_t task, size_t worker) {
          EXPECT_LT(worker, pool.num_threads());
          hits[task].fetch_add(1);
        });
      }
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 20);
    }
  }
}

// Many tiny loops on a pool with more threads than this machine has cores: every task still runs once,
// and the results of loops that follow each other never mix (a worker that wakes after its loop closed
// must not run tasks of the next one).
TEST(ThreadPool, OversubscribedBackToBackLoops) {
  ThreadPool pool(3 * std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> sums(2000, 0);
  for (size_t loop = 0; loop < sums.size(); ++loop) {
    std::vector<std::atomic<int>> hits(7);
    pool.ParallelFor(hits.size(), [&](size_t task, size_t) { hits[task].fetch_add(static_cast<int>(loop)); });
    for (auto& h : hits) sums[loop] += h.load();
  }
  for (size_t loop = 0; loop < sums.size(); ++loop) ASSERT_EQ(sums[loop], 7 * static_cast<int>(loop));
}

TEST(File, WriteReadMap) {
  std::string path = testing::TempDir() + "/k3_file_test.bin";
  ASSERT_TRUE(WriteFileAtomic(path, "hello").ok());
  EXPECT_EQ(*ReadFileToString(path), "hello");
  auto mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ((*mapped)->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*mapped)->data()), 5), "hello");
  EXPECT_EQ(MappedFile::Open(path + ".missing").status().code(), StatusCode::kNotFound);
}

TEST(HugePageBuffer, AlignedZeroedAndMovable) {
  HugePageBuffer buffer(3 * kHugePageBytes + 123);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), 3 * kHugePageBytes + 123);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % kHugePageBytes, 0u);
  size_t nonzero = 0;
  for (size_t i = 0; i < buffer.size(); ++i) nonzero += buffer.data()[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  buffer.data()[buffer.size() - 1] = 7;  // the last byte is writable
  HugePageBuffer moved(std::move(buffer));
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(moved.as<uint8_t>()[moved.size() - 1], 7);
  HugePageBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.size(), 3 * kHugePageBytes + 123);
  EXPECT_EQ(HugePageBuffer(0).data(), nullptr);
  EXPECT_EQ(HugePageAlign(1), kHugePageBytes);
  EXPECT_EQ(HugePageAlign(kHugePageBytes), kHugePageBytes);
}

TEST(HugePageBuffer, ReleasedPagesReadAsZerosAndTheRestKeepsItsBytes) {
  HugePageBuffer buffer(kHugePageBytes + 5000);
  std::memset(buffer.data(), 0xAB, buffer.size());
  // Only whole 4 KiB pages inside the range: [100, 9000) releases [4096, 8192).
  EXPECT_EQ(buffer.ReleasePages(100, 8900), 4096u);
  for (size_t i : {size_t{0}, size_t{4095}, size_t{8192}, size_t{8999}})
    EXPECT_EQ(buffer.data()[i], 0xAB) << i;
  for (size_t i : {size_t{4096}, size_t{6000}, size_t{8191}}) EXPECT_EQ(buffer.data()[i], 0) << i;
  // A range past the end is clipped; the partial last page stays.
  EXPECT_EQ(buffer.ReleasePages(kHugePageBytes, 1 << 30), 4096u);
  EXPECT_EQ(buffer.data()[kHugePageBytes + 4095], 0);
  EXPECT_EQ(buffer.data()[kHugePageBytes + 4096], 0xAB);
  EXPECT_EQ(buffer.ReleasePages(buffer.size(), 10), 0u);
  EXPECT_EQ(buffer.ReleasePages(10, 20), 0u);  // no whole page inside
  EXPECT_EQ(buffer.data()[10], 0xAB);
}

}  // namespace
}  // namespace k3

namespace k3 {
namespace {

TEST(OpenFilesTest, SoftLimitIsRaisedToTheHardOneAndNeverLowered) {
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max > 64) {
    rlimit low = lim;
    low.rlim_cur = 64;  // as a system with a low default would start the server
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  }
  const OpenFilesLimit first = RaiseOpenFilesLimit();
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  EXPECT_EQ(first.soft, lim.rlim_cur);
  if (lim.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(lim.rlim_cur, lim.rlim_max);
  }
  EXPECT_GE(first.soft, first.before);
  const OpenFilesLimit again = RaiseOpenFilesLimit();  // already at the hard limit: unchanged
  EXPECT_FALSE(again.raised);
  EXPECT_EQ(again.soft, first.soft);
}

}  // namespace
}  // namespace k3

namespace k3 {
namespace {

TEST(XmlEscapeTest, MarkupControlsAndBrokenUtf8) {
  EXPECT_EQ(XmlEscape(R"(a<b>&"c'd)"), "a&lt;b&gt;&amp;&quot;c&apos;d");
  EXPECT_EQ(XmlEscape("tab\tnew\nline\x01"
                      "bell\x07"),
            "tab\tnew\nline bell ");
  EXPECT_EQ(XmlEscape("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate: each byte run -> U+FFFD.
  EXPECT_EQ(XmlEscape("\x80"), "\xEF\xBF\xBD");
  EXPECT_EQ(XmlEscape("x\xE2\x82"), "x\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(XmlEscape("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(XmlEscape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(XmlEscape(""), "");
}

}  // namespace
}  // namespace k3
