// ResolveGroup: flags and the LeaderWorkerSet environment -> this process's rank; every refusal names
// the flag. LocalRanks: children are started with K3_LOCAL_RANK and reaped.
#include "src/dist/launch.h"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

namespace k3::dist {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ResolveGroupTest, OneNodeFromFlags) {
  GroupFlags f;
  f.tensor_parallel_size = 4;
  auto plan = ResolveGroup(f, Env({}));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->world, 4);
  EXPECT_EQ(plan->ranks_per_node, 4);
  EXPECT_EQ(plan->rank, 0);
  EXPECT_TRUE(plan->serves_http());
  EXPECT_TRUE(plan->spawns_local_ranks());
  auto child = ResolveGroup(f, Env({{"K3_LOCAL_RANK", "3"}}));
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(child->rank, 3);
  EXPECT_FALSE(child->serves_http());
  EXPECT_FALSE(child->spawns_local_ranks());
}

TEST(ResolveGroupTest, LeaderWorkerSetEnvironmentStandsInForFlags) {
  GroupFlags f;
  f.tensor_parallel_size = 8;
  auto worker = ResolveGroup(f, Env({{"LWS_LEADER_ADDRESS", "k3-0.k3"},
                                     {"LWS_GROUP_SIZE", "2"},
                                     {"LWS_WORKER_INDEX", "1"},
                                     {"K3_LOCAL_RANK", "2"}}));
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  EXPECT_EQ(worker->master_addr, "k3-0.k3");
  EXPECT_EQ(worker->nnodes, 2);
  EXPECT_EQ(worker->node_rank, 1);
  EXPECT_EQ(worker->rank, 6);
  EXPECT_FALSE(worker->serves_http());
  f.node_rank = 0;  // a flag wins over the environment
  f.master_addr = "10.1.2.3";
  auto leader = ResolveGroup(f, Env({{"LWS_LEADER_ADDRESS", "k3-0.k3"},
                                     {"LWS_GROUP_SIZE", "2"},
                                     {"LWS_WORKER_INDEX", "1"},
                                     {"GLOO_SOCKET_IFNAME", "eth1"}}));
  ASSERT_TRUE(leader.ok());
  EXPECT_EQ(leader->rank, 0);
  EXPECT_EQ(leader->master_addr, "10.1.2.3");
  EXPECT_EQ(leader->ifname, "eth1");
}

TEST(ResolveGroupTest, RefusalsNameTheFlag) {
  auto message = [](GroupFlags f, std::map<std::string, std::string> env = {}) {
    auto plan = ResolveGroup(f, Env(std::move(env)));
    EXPECT_FALSE(plan.ok());
    return plan.ok() ? std::string() : plan.status().message();
  };
  GroupFlags f;
  f.tensor_parallel_size = 3;
  f.nnodes = 2;
  f.master_addr = "h";
  EXPECT_NE(message(f).find("--tensor-parallel-size 3 is not divisible by --nnodes 2"), std::string::npos);
  f = GroupFlags{};
  f.pipeline_parallel_size = 3;
  EXPECT_NE(message(f).find("--pipeline-parallel-size 3"), std::string::npos);
  f = GroupFlags{};
  f.data_parallel_size = 2;
  EXPECT_NE(message(f).find("--data-parallel-size 2"), std::string::npos);
  f = GroupFlags{};
  f.tensor_parallel_size = 4;
  f.nnodes = 2;
  EXPECT_NE(message(f).find("--master-addr"), std::string::npos);
  f.master_addr = "h";
  f.node_rank = 2;
  EXPECT_NE(message(f).find("--node-rank 2"), std::string::npos);
  f.node_rank = 0;
  f.headless = true;
  EXPECT_NE(message(f).find("--headless on node 0"), std::string::npos);
  f = GroupFlags{};
  f.master_port = 70000;
  EXPECT_NE(message(f).find("--master-port 70000"), std::string::npos);
  f = GroupFlags{};
  EXPECT_NE(message(f, {{"LWS_WORKER_INDEX", "x"}}).find("LWS_WORKER_INDEX=x"), std::string::npos);
  f.tensor_parallel_size = 2;
  EXPECT_NE(message(f, {{"K3_LOCAL_RANK", "2"}}).find("K3_LOCAL_RANK=2"), std::string::npos);
}

TEST(LocalRanksTest, StartsChildrenWithTheirLocalRank) {
  GroupFlags f;
  f.tensor_parallel_size = 3;
  auto plan = ResolveGroup(f, Env({}));
  ASSERT_TRUE(plan.ok());
  // The children are this test binary re-run on a test that exits with 0 only where K3_LOCAL_RANK is set.
  std::vector<std::string> argv = {"self", "--gtest_filter=LocalRanksTest.DISABLED_ChildSide",
                                   "--gtest_also_run_disabled_tests"};
  int unexpected = 0;
  auto ranks = LocalRanks::Start(argv, *plan, [&](int, const std::string&) { ++unexpected; });
  ASSERT_TRUE(ranks.ok()) << ranks.status().ToString();
  (*ranks)->ExpectExit();
  Status done = (*ranks)->Wait(std::chrono::seconds(60));
  EXPECT_TRUE(done.ok()) << done.ToString();
  EXPECT_EQ(unexpected, 0);
}

// A rank that exits with 0 before the parent calls ExpectExit() (it followed the group's shutdown while the
// parent was still unloading its model: bench/dist_decode_bench exited with 3 that way) is not reported.
TEST(LocalRanksTest, CleanExitBeforeExpectExitIsNotReported) {
  GroupFlags f;
  f.tensor_parallel_size = 2;
  auto plan = ResolveGroup(f, Env({}));
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> argv = {"self", "--gtest_filter=LocalRanksTest.DISABLED_ChildSide",
                                   "--gtest_also_run_disabled_tests"};
  std::atomic<int> unexpected{0};
  auto ranks = LocalRanks::Start(argv, *plan, [&](int, const std::string&) { ++unexpected; });
  ASSERT_TRUE(ranks.ok()) << ranks.status().ToString();
  Status done = (*ranks)->Wait(std::chrono::seconds(60));  // the child ends; ExpectExit() never called
  EXPECT_TRUE(done.ok()) << done.ToString();
  EXPECT_EQ(unexpected.load(), 0);
}

// Run only as a child of StartsChildrenWithTheirLocalRank and CleanExitBeforeExpectExitIsNotReported.
TEST(LocalRanksTest, DISABLED_ChildSide) {
  const char* rank = std::getenv("K3_LOCAL_RANK");
  if (rank == nullptr) GTEST_SKIP() << "run by StartsChildrenWithTheirLocalRank as a child";
  EXPECT_TRUE(std::string(rank) == "1" || std::string(rank) == "2") << rank;
}

TEST(LocalRanksTest, ReportsAChildThatDies) {
  GroupFlags f;
  f.tensor_parallel_size = 2;
  auto plan = ResolveGroup(f, Env({}));
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> argv = {"self", "--gtest_filter=LocalRanksTest.DISABLED_ChildThatFails",
                                   "--gtest_also_run_disabled_tests"};
  std::mutex mu;
  std::string what;
  auto ranks = LocalRanks::Start(argv, *plan, [&](int r, const std::string& d) {
    std::lock_guard<std::mutex> lock(mu);
    what = std::to_string(r) + " " + d;
  });
  ASSERT_TRUE(ranks.ok());
  for (int i = 0; i < 600; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!what.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(what.find("1 exited with code 1"), std::string::npos) << what;
}

// Run only as a child of ReportsAChildThatDies.
TEST(LocalRanksTest, DISABLED_ChildThatFails) {
  if (std::getenv("K3_LOCAL_RANK") == nullptr) GTEST_SKIP() << "run by ReportsAChildThatDies as a child";
  ADD_FAILURE() << "this child fails on purpose";
}

}  // namespace
}  // namespace k3::dist
