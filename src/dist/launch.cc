// ResolveGroup, LocalRanks and GroupFingerprint (launch.h).
#include "src/dist/launch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace k3::dist {
namespace {

// An integer from an environment variable; nullopt when unset, an error when not an integer.
Result<int> EnvInt(const EnvLookup& env, const char* name, int fallback) {
  const char* value = env(name);
  if (value == nullptr || *value == '\0') return fallback;
  int out = 0;
  const char* end = value + std::strlen(value);
  auto [ptr, ec] = std::from_chars(value, end, out);
  if (ec != std::errc() || ptr != end) return InvalidArgument("{}={}: not an integer", name, value);
  return out;
}

}  // namespace

Result<GroupPlan> ResolveGroup(const GroupFlags& flags, const EnvLookup& env) {
  if (flags.pipeline_parallel_size != 1) {
    return InvalidArgument(
        "--pipeline-parallel-size {}: pipeline parallelism is not supported; k3 splits a model over ranks "
        "with --tensor-parallel-size (heads and FFN width) and --enable-expert-parallel",
        flags.pipeline_parallel_size);
  }
  if (flags.data_parallel_size != 1) {
    return InvalidArgument(
        "--data-parallel-size {}: data parallelism is not supported; run one k3 serve per replica behind a "
        "load balancer",
        flags.data_parallel_size);
  }
  GroupPlan plan;
  plan.world = flags.tensor_parallel_size;
  if (plan.world < 1)
    return InvalidArgument("--tensor-parallel-size {}: must be at least 1", flags.tensor_parallel_size);
  plan.expert_parallel = flags.expert_parallel;
  K3_ASSIGN_OR_RETURN(plan.nnodes, EnvInt(env, "LWS_GROUP_SIZE", 1));
  if (flags.nnodes >= 0) plan.nnodes = flags.nnodes;
  K3_ASSIGN_OR_RETURN(plan.node_rank, EnvInt(env, "LWS_WORKER_INDEX", 0));
  if (flags.node_rank >= 0) plan.node_rank = flags.node_rank;
  const char* leader = env("LWS_LEADER_ADDRESS");
  if (!flags.master_addr.empty()) {
    plan.master_addr = flags.master_addr;
  } else if (leader != nullptr && *leader != '\0') {
    plan.master_addr = leader;
  }
  plan.master_port = flags.master_port;
  plan.ifname = flags.ifname;
  if (plan.ifname.empty() && env("GLOO_SOCKET_IFNAME") != nullptr) plan.ifname = env("GLOO_SOCKET_IFNAME");
  if (plan.nnodes < 1) return InvalidArgument("--nnodes {}: must be at least 1", plan.nnodes);
  if (plan.world % plan.nnodes != 0) {
    return InvalidArgument(
        "--tensor-parallel-size {} is not divisible by --nnodes {}: every node runs the same number of "
        "ranks; choose a tensor parallel size that is a multiple of the node count",
        plan.world, plan.nnodes);
  }
  if (plan.node_rank < 0 || plan.node_rank >= plan.nnodes) {
    return InvalidArgument("--node-rank {} is not in [0, {}) (--nnodes {})", plan.node_rank, plan.nnodes,
                           plan.nnodes);
  }
  if (flags.headless && plan.node_rank == 0) {
    return InvalidArgument(
        "--headless on node 0: node 0 serves HTTP and schedules; start the other nodes with --headless "
        "--node-rank 1..{}",
        plan.nnodes - 1);
  }
  if (plan.nnodes > 1 && flags.master_addr.empty() && (leader == nullptr || *leader == '\0')) {
    return InvalidArgument(
        "--nnodes {} needs --master-addr (node 0's address), or LWS_LEADER_ADDRESS under LeaderWorkerSet",
        plan.nnodes);
  }
  if (plan.master_port < 1 || plan.master_port > 65535)
    return InvalidArgument("--master-port {}: not a TCP port", plan.master_port);
  if (!(flags.dist_timeout_s > 0))
    return InvalidArgument("--dist-timeout {}: must be > 0 seconds", flags.dist_timeout_s);
  plan.timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.dist_timeout_s * 1000));
  plan.ranks_per_node = plan.world / plan.nnodes;
  K3_ASSIGN_OR_RETURN(plan.local_rank, EnvInt(env, "K3_LOCAL_RANK", 0));
  if (plan.local_rank < 0 || plan.local_rank >= plan.ranks_per_node) {
    return InvalidArgument("K3_LOCAL_RANK={} is not in [0, {}) (ranks per node)", plan.local_rank,
                           plan.ranks_per_node);
  }
  plan.rank = plan.node_rank * plan.ranks_per_node + plan.local_rank;
  return plan;
}

struct LocalRanks::Impl {
  struct Child {
    int local_rank = 0;
    pid_t pid = -1;
    bool exited = false;
    int status = 0;
  };
  std::mutex mu;
  std::vector<Child> children;
  std::atomic<bool> expected{false};
  std::atomic<bool> stop{false};
  std::function<void(int, const std::string&)> on_unexpected_exit;
  std::thread watcher;

  static std::string Describe(int status) {
    if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
    if (WIFSIGNALED(status))
      return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return "ended";
  }

  // Reaps children that ended; returns true when all have.
  bool Reap() {
    std::lock_guard<std::mutex> lock(mu);
    bool all = true;
    for (Child& c : children) {
      if (c.exited) continue;
      int status = 0;
      const pid_t r = waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid || (r < 0 && errno == ECHILD)) {
        c.exited = true;
        c.status = r == c.pid ? status : 0;
        // A rank that exited with 0 finished its work (it followed rank 0's shutdown, which can reach it
        // before rank 0 gets to ExpectExit()): only a crash or a failed start is unexpected.
        const bool clean = r == c.pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!expected.load() && !clean && on_unexpected_exit)
          on_unexpected_exit(c.local_rank, Describe(c.status));
      } else {
        all = false;
      }
    }
    return all;
  }

  void Watch() {
    while (!stop.load()) {
      if (Reap()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
};

Result<std::unique_ptr<LocalRanks>> LocalRanks::Start(
    const std::vector<std::string>& argv, const GroupPlan& plan,
    std::function<void(int local_rank, const std::string& description)> on_unexpected_exit) {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return IoError("cannot find this executable (/proc/self/exe): {}", ec.message());
  auto impl = std::make_unique<Impl>();
  impl->on_unexpected_exit = std::move(on_unexpected_exit);
  const pid_t parent = getpid();
  for (int r = 1; r < plan.ranks_per_node; ++r) {
    // Everything the child needs is built before fork: after it, only async-signal-safe calls.
    std::vector<std::string> args = argv;
    if (args.empty()) args.push_back(exe);
    args[0] = exe;
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "K3_LOCAL_RANK=", 14) != 0) env_strings.emplace_back(*e);
    }
    env_strings.push_back(fmt::format("K3_LOCAL_RANK={}", r));
    std::vector<char*> c_args, c_env;
    for (std::string& a : args) c_args.push_back(a.data());
    c_args.push_back(nullptr);
    for (std::string& e : env_strings) c_env.push_back(e.data());
    c_env.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return IoError("cannot start local rank {}: fork failed: {}", r, std::strerror(errno));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // the parent died before the line above
      execve(exe.c_str(), c_args.data(), c_env.data());
      _exit(127);
    }
    impl->children.push_back(Impl::Child{r, pid});
  }
  Impl* raw = impl.get();
  impl->watcher = std::thread([raw] { raw->Watch(); });
  return std::unique_ptr<LocalRanks>(new LocalRanks(std::move(impl)));
}

LocalRanks::LocalRanks(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LocalRanks::~LocalRanks() {
  impl_->expected = true;
  if (!Wait(std::chrono::seconds(10)).ok()) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (Impl::Child& c : impl_->children) {
      if (!c.exited) kill(c.pid, SIGKILL);
    }
  }
  impl_->stop = true;
  if (impl_->watcher.joinable()) impl_->watcher.join();
  (void)impl_->Reap();
}

void LocalRanks::ExpectExit() { impl_->expected = true; }

Status LocalRanks::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!impl_->Reap()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return Internal("local ranks still running after {} ms", timeout.count());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const Impl::Child& c : impl_->children) {
    if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
      return Internal("local rank {} {}", c.local_rank, Impl::Describe(c.status));
  }
  return OkStatus();
}

Result<std::string> GroupFingerprint(const std::string& version, const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::ifstream config(fs::path(model_dir) / "config.json", std::ios::binary);
  if (!config) return NotFound("{}/config.json: cannot read it", model_dir);
  const std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  std::error_code ec;
  std::vector<std::pair<std::string, uint64_t>> shards;
  for (const fs::directory_entry& e : fs::directory_iterator(model_dir, ec)) {
    if (e.path().extension() == ".safetensors")
      shards.emplace_back(e.path().filename().string(), e.file_size(ec));
  }
  return CheckpointFingerprint(version, text, std::move(shards));
}

std::string CheckpointFingerprint(const std::string& version, std::string_view config_json,
                                  std::vector<std::pair<std::string, uint64_t>> shards) {
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a over config.json, then each shard's name and size
  auto mix = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ULL;
  };
  mix(config_json);
  std::sort(shards.begin(), shards.end());
  for (const auto& [name, size] : shards) mix(fmt::format("{}:{};", name, size));
  return fmt::format("k3 {} checkpoint {:016x}", version, hash);
}

}  // namespace k3::dist
