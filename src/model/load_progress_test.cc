// LoadProgress and LoadProgressJson: phases, byte counts from several threads, the JSON /health shows.
#include "src/model/load_progress.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3::model {
namespace {

TEST(LoadProgressTest, CountsBytesFromManyThreadsAndKeepsTheLatestPhase) {
  LoadProgress progress;
  EXPECT_EQ(progress.Get().phase, "starting");
  progress.SetTotalBytes(8 * 1000 * 4096);
  progress.SetPhase("reading weights from s3://b/p");
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) progress.AddBytes(4096);
    });
  }
  for (std::thread& t : readers) t.join();
  const LoadProgress::Snapshot s = progress.Get();
  EXPECT_EQ(s.phase, "reading weights from s3://b/p");
  EXPECT_EQ(s.bytes_done, uint64_t{8 * 1000 * 4096});
  EXPECT_GE(s.elapsed_s, s.phase_s);
}

TEST(LoadProgressTest, JsonHasPercentRateAndEtaOnlyWhenBytesAreKnown) {
  LoadProgress::Snapshot s;
  s.phase = "loading /models/k3";
  s.elapsed_s = 3.04;
  nlohmann::json j = LoadProgressJson(s);
  EXPECT_EQ(j, nlohmann::json({{"phase", "loading /models/k3"}, {"elapsed_s", 3.0}}));

  s.phase = "reading weights";
  s.bytes_total = 1000;
  s.bytes_done = 250;
  s.phase_s = 2.0;
  j = LoadProgressJson(s);
  EXPECT_EQ(j["bytes_done"], 250);
  EXPECT_EQ(j["bytes_total"], 1000);
  EXPECT_DOUBLE_EQ(j["percent"].get<double>(), 25.0);
  EXPECT_EQ(j["bytes_per_s"], 125);
  EXPECT_DOUBLE_EQ(j["eta_s"].get<double>(), 6.0);  // 750 bytes left at 125 B/s

  s.bytes_done = 0;  // nothing read yet: no rate, so no ETA
  j = LoadProgressJson(s);
  EXPECT_EQ(j["bytes_per_s"], 0);
  EXPECT_FALSE(j.contains("eta_s"));

  s.bytes_done = 1200;  // a retried range counted twice never shows more than 100 %
  j = LoadProgressJson(s);
  EXPECT_EQ(j["bytes_done"], 1000);
  EXPECT_DOUBLE_EQ(j["percent"].get<double>(), 100.0);
}

}  // namespace
}  // namespace k3::model
