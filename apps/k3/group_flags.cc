// The parallelism flags of `k3 serve` and `k3 run` (commands.h): registration, resolution with the
// LeaderWorkerSet environment, and starting the node's other ranks.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "apps/k3/commands.h"

namespace k3::app {

std::vector<std::string>& CommandLine() {
  static std::vector<std::string> args;
  return args;
}

void AddGroupFlags(CLI::App* cmd, dist::GroupFlags* f, const std::string& group) {
  cmd->add_option("--tensor-parallel-size", f->tensor_parallel_size,
                  "ranks one model is split over (heads and FFN width); node 0 starts its local ranks")
      ->capture_default_str()
      ->group(group);
  cmd->add_flag("--enable-expert-parallel", f->expert_parallel,
                "give each rank whole routed experts instead of a slice of every expert")
      ->group(group);
  cmd->add_option("--pipeline-parallel-size", f->pipeline_parallel_size, "1 only (not supported)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--data-parallel-size", f->data_parallel_size, "1 only (one replica per k3 serve)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--nnodes", f->nnodes, "nodes the ranks span (default: $LWS_GROUP_SIZE, else 1)")
      ->group(group);
  cmd->add_option("--node-rank", f->node_rank, "this node's index (default: $LWS_WORKER_INDEX, else 0)")
      ->group(group);
  cmd->add_option("--master-addr", f->master_addr,
                  "node 0's address, where rank 0 serves the rendezvous (default: $LWS_LEADER_ADDRESS)")
      ->group(group);
  cmd->add_option("--master-port", f->master_port, "rendezvous port on node 0")
      ->capture_default_str()
      ->group(group);
  cmd->add_flag("--headless", f->headless, "ranks only: no HTTP server (nodes other than 0)")->group(group);
  cmd->add_option("--dist-timeout", f->dist_timeout_s,
                  "seconds to wait for every rank at start-up (once serving, a rank silent for 45 s is lost)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--dist-ifname", f->ifname,
                  "network interface for rank traffic (default: $GLOO_SOCKET_IFNAME)")
      ->group(group);
}

Result<dist::GroupPlan> ResolveGroupFromFlags(const dist::GroupFlags& flags) {
  return dist::ResolveGroup(flags, [](const char* name) { return std::getenv(name); });
}

Result<std::unique_ptr<dist::LocalRanks>> StartLocalRanks(const dist::GroupPlan& plan,
                                                          const std::string& command) {
  if (!plan.spawns_local_ranks()) return std::unique_ptr<dist::LocalRanks>();
  return dist::LocalRanks::Start(CommandLine(), plan, [command](int local_rank, const std::string& what) {
    // A rank of this node died: the group cannot compute. Name it and end the node's processes.
    std::fprintf(stderr, "k3 %s: local rank %d %s; stopping this node's ranks\n", command.c_str(), local_rank,
                 what.c_str());
    std::fflush(stderr);
    std::_Exit(3);
  });
}

int DefaultThreadsPerRank(const dist::GroupPlan& plan, int threads_flag) {
  if (threads_flag > 0) return threads_flag;
  const unsigned cores = std::thread::hardware_concurrency();
  return std::max(1, static_cast<int>(cores) / std::max(1, plan.ranks_per_node));
}

}  // namespace k3::app
