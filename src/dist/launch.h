// Launch: who this process is in a group of ranks, from vLLM's multiprocessing-executor flags or the
// LeaderWorkerSet environment (spec/distributed.md, "Processes"), and the child processes that are the
// other ranks of this node.
//
//   k3 serve --tensor-parallel-size 4                                  one node, ranks 0..3
//   k3 serve --tensor-parallel-size 8 --nnodes 2 --node-rank 0 --master-addr HOST   node 0: ranks 0..3
//   k3 serve --tensor-parallel-size 8 --nnodes 2 --node-rank 1 --master-addr HOST --headless  ranks 4..7
//   under LWS: LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX stand in for --master-addr,
//   --nnodes and --node-rank (a flag given on the command line wins); index > 0 implies --headless.
//
// The first process of a node (local rank 0) starts local ranks 1..n-1 as copies of its own command
// line with K3_LOCAL_RANK=r in their environment; they die with it (PR_SET_PDEATHSIG).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/status.h"

namespace k3::dist {

// The flags as given (vLLM's names). Unset: -1 / empty.
struct GroupFlags {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  int data_parallel_size = 1;
  bool expert_parallel = false;
  int nnodes = -1;
  int node_rank = -1;
  std::string master_addr;
  int master_port = 29500;
  bool headless = false;
  std::string ifname;
  double dist_timeout_s = 600;
};

struct GroupPlan {
  int world = 1;  // ranks in the group (= tensor parallel size)
  int nnodes = 1;
  int node_rank = 0;
  int ranks_per_node = 1;
  int local_rank = 0;  // this process on its node
  int rank = 0;        // node_rank * ranks_per_node + local_rank
  bool expert_parallel = false;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string ifname;
  std::chrono::milliseconds timeout{600'000};

  bool serves_http() const { return rank == 0; }
  // This process starts the node's other ranks.
  bool spawns_local_ranks() const { return local_rank == 0 && ranks_per_node > 1; }
};

using EnvLookup = std::function<const char*(const char*)>;

// Flags + environment -> plan. InvalidArgument with a one-line message naming the flag (or variable),
// the value and the fix: sizes < 1, pipeline / data parallel > 1 (not supported), nnodes not dividing
// the tensor parallel size, node rank out of range, --headless on node 0, several nodes without a
// master address, a port out of range, a K3_LOCAL_RANK out of range.
Result<GroupPlan> ResolveGroup(const GroupFlags& flags, const EnvLookup& env);

// The node's other ranks as child processes.
class LocalRanks {
 public:
  // Starts `argv` (argv[0] is replaced by this executable) for local ranks 1..plan.ranks_per_node-1.
  // on_unexpected_exit(local_rank, description) is called from a watcher thread when a child ends
  // before ExpectExit() other than with exit code 0 (a crash, a failed start-up): the caller decides how
  // to stop. A child that exits with 0 finished its work (it followed rank 0's shutdown, which may reach
  // it before this process gets to ExpectExit()) and is never reported.
  static Result<std::unique_ptr<LocalRanks>> Start(
      const std::vector<std::string>& argv, const GroupPlan& plan,
      std::function<void(int local_rank, const std::string& description)> on_unexpected_exit);
  ~LocalRanks();  // waits up to 10 s for the children, then kills what is left

  // From now on a child's exit is not reported: the group has formed and its collectives notice a lost
  // rank (rank 0 answers 503 and exits), or rank 0 sent the shutdown plan.
  void ExpectExit();
  // Waits up to `timeout` for every child; OK when all exited with code 0.
  Status Wait(std::chrono::milliseconds timeout);

 private:
  struct Impl;
  explicit LocalRanks(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A text that must be equal on every rank: the build and the checkpoint's config and shard sizes.
// Ranks whose fingerprints differ are refused at start-up.
Result<std::string> GroupFingerprint(const std::string& version, const std::string& model_dir);
// The same text from config.json's bytes and the shards' (name, size) pairs, in any order (a model in a
// bucket: its listing).
std::string CheckpointFingerprint(const std::string& version, std::string_view config_json,
                                  std::vector<std::pair<std::string, uint64_t>> shards);

}  // namespace k3::dist
