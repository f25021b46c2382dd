// LeaderModel and RunWorker: the step protocol between rank 0 and the other ranks (rank_group.h).
#include "src/model/rank_group.h"

#include "src/base/check.h"
#include "src/io/model_config.h"
#include "src/model/step_plan.h"

namespace k3::model {

// ---------------------------------------------------------------------------------------------------
// Rank 0.

LeaderModel::LeaderModel(std::unique_ptr<Model> local, dist::Communicator* comm,
                         std::chrono::milliseconds heartbeat, std::function<void(const Status&)> on_failure)
    : local_(std::move(local)), comm_(comm), heartbeat_(heartbeat), on_failure_(std::move(on_failure)) {
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
}

LeaderModel::~LeaderModel() { (void)Shutdown(); }

void LeaderModel::Fail(const Status& status) {
  if (!failed_.ok()) return;
  failed_ = status;
  if (on_failure_) on_failure_(status);
}

Status LeaderModel::Send(const StepPlan& plan) {
  if (!failed_.ok()) return failed_;
  if (shut_down_) return Unavailable("the model group was shut down");
  std::string bytes = EncodeStepPlan(plan, ++sequence_);
  const auto t0 = std::chrono::steady_clock::now();
  Status sent = dist::BroadcastBytes(*comm_, &bytes, /*root=*/0, kMaxPlanBytes);
  last_sent_ = std::chrono::steady_clock::now();
  plan_seconds_.fetch_add(std::chrono::duration<double>(last_sent_ - t0).count());
  if (!sent.ok()) Fail(sent.WithPrefix("sending step plan to the other ranks"));
  return failed_;
}

Status LeaderModel::Execute(const StepPlan& plan, ForwardOutput* out) {
  std::lock_guard<std::mutex> lock(comm_mu_);
  K3_RETURN_IF_ERROR(Send(plan));
  const Status executed = local_->Execute(plan, out);
  if (!executed.ok()) Fail(executed.WithPrefix("forward pass across ranks"));
  return failed_;
}

Status LeaderModel::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(heartbeat_mu_);
    stop_heartbeat_ = true;
  }
  heartbeat_cv_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  std::lock_guard<std::mutex> lock(comm_mu_);
  if (shut_down_ || !failed_.ok()) return failed_;
  StepPlan plan;
  plan.kind = StepKind::kShutdown;
  Status s = Send(plan);
  shut_down_ = true;
  return s;
}

void LeaderModel::HeartbeatLoop() {
  std::unique_lock<std::mutex> lock(heartbeat_mu_);
  while (!stop_heartbeat_) {
    heartbeat_cv_.wait_for(lock, heartbeat_ / 2);
    if (stop_heartbeat_) break;
    lock.unlock();
    {
      std::lock_guard<std::mutex> comm_lock(comm_mu_);
      if (failed_.ok() && !shut_down_ && std::chrono::steady_clock::now() - last_sent_ >= heartbeat_) {
        StepPlan plan;
        plan.kind = StepKind::kHeartbeat;
        (void)Send(plan);
      }
    }
    lock.lock();
  }
}

// ---------------------------------------------------------------------------------------------------
// Ranks > 0.
Status RunWorker(Model& local, dist::Communicator& comm) {
  ForwardOutput out;
  for (uint64_t expected = 1;; ++expected) {
    std::string bytes;
    Status received = dist::BroadcastBytes(comm, &bytes, /*root=*/0, kMaxPlanBytes);
    if (!received.ok()) return received.WithPrefix("waiting for rank 0's next step");
    K3_ASSIGN_OR_RETURN(StepPlan plan, DecodeStepPlan(bytes));
    if (plan.sequence != expected)
      return DataLoss("step plan {} arrived where {} was expected", plan.sequence, expected);
    if (plan.kind == StepKind::kShutdown) return OkStatus();
    if (plan.kind == StepKind::kHeartbeat) continue;
    K3_RETURN_IF_ERROR(local.Execute(plan, &out));
  }
}

Result<GroupMember> JoinGroupAndLoad(const std::string& dir, ThreadPool* pool, const dist::GroupPlan& plan,
                                     const std::string& fingerprint,
                                     std::function<void(const Status&)> on_failure) {
  if (plan.world == 1) {
    GroupMember member;
    K3_ASSIGN_OR_RETURN(member.model, Model::Load(dir, pool));
    return member;
  }
  K3_ASSIGN_OR_RETURN(io::ModelConfig cfg, io::LoadModelConfig(dir));
  return JoinGroupAndLoadWith(
      cfg, plan, fingerprint, std::move(on_failure),
      [&](const Parallelism& parallelism) { return Model::Load(dir, pool, parallelism); });
}

Result<GroupMember> JoinGroupAndLoadWith(const io::ModelConfig& cfg, const dist::GroupPlan& plan,
                                         const std::string& fingerprint,
                                         std::function<void(const Status&)> on_failure,
                                         const ShardLoader& load) {
  GroupMember member;
  if (plan.world == 1) {
    K3_ASSIGN_OR_RETURN(member.model, load(Parallelism{}));
    return member;
  }
  // A layout the checkpoint cannot take is refused before any rank waits for another.
  K3_RETURN_IF_ERROR(CheckShardable(cfg, ShardSpec{plan.rank, plan.world, plan.expert_parallel}));
  dist::CommunicatorOptions options;
  options.rank = plan.rank;
  options.world_size = plan.world;
  options.master_addr = plan.master_addr;
  options.master_port = plan.master_port;
  options.ifname = plan.ifname;
  options.timeout = plan.timeout;
  options.fingerprint = fingerprint;
  K3_ASSIGN_OR_RETURN(member.comm, dist::CreateCommunicator(options));
  const ShardSpec shard{plan.rank, plan.world, plan.expert_parallel};
  auto local = load(Parallelism{shard, member.comm.get()});
  // Every rank reaches this barrier, loaded or not, so a rank that failed to load does not leave the
  // others waiting for it until the timeout: they see its failure at the second barrier.
  const bool loaded = local.ok();
  std::vector<float> failures = {loaded ? 0.0f : 1.0f};
  Status gathered = member.comm->AllReduceSum(failures);
  if (!loaded) return local.status();
  if (!gathered.ok()) return gathered.WithPrefix("waiting for every rank to load its shard");
  if (failures[0] > 0) {
    return InvalidArgument("{:.0f} other rank(s) of the group failed to load the model (see their logs)",
                           failures[0]);
  }
  member.comm->SetTimeout(std::min(plan.timeout, kServingTimeout));
  if (plan.rank == 0) {
    auto leader = std::make_unique<LeaderModel>(std::move(*local), member.comm.get(), kHeartbeatInterval,
                                                std::move(on_failure));
    member.leader = leader.get();
    member.model = std::move(leader);
  } else {
    member.model = std::move(*local);
  }
  return member;
}

}  // namespace k3::model
