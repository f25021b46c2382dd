// LeaderModel and RunWorker: the step protocol between rank 0 and the other ranks (rank_group.h).
#include "src/model/rank_group.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "src/base/check.h"
#include "src/io/model_config.h"
#include "src/model/sequence_state.h"
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

std::unique_ptr<SequenceState> LeaderModel::NewSequenceState() const {
  return std::make_unique<ModelSequenceState>(local_->state_config(), log_);
}

void LeaderModel::Fail(const Status& status) {
  if (!failed_.ok()) return;
  failed_ = status;
  if (on_failure_) on_failure_(status);
}

Status LeaderModel::Send(StepPlan plan) {
  if (!failed_.ok()) return failed_;
  if (shut_down_) return Internal("the model group was shut down");
  plan.sequence = ++sequence_;
  std::string bytes = EncodeStepPlan(plan);
  const auto t0 = std::chrono::steady_clock::now();
  Status sent = dist::BroadcastBytes(*comm_, &bytes, /*root=*/0, kMaxPlanBytes);
  last_sent_ = std::chrono::steady_clock::now();
  plan_seconds_.fetch_add(std::chrono::duration<double>(last_sent_ - t0).count());
  if (!sent.ok()) Fail(sent.WithPrefix("sending step plan to the other ranks"));
  return failed_;
}

Status LeaderModel::Forward(std::span<const SequenceBatchItem> batch, ForwardOutput* out) {
  std::lock_guard<std::mutex> lock(comm_mu_);
  StepPlan plan;
  plan.kind = StepKind::kForward;
  plan.ops = log_->Drain();
  plan.items.reserve(batch.size());
  for (const SequenceBatchItem& item : batch) {
    const auto* state = dynamic_cast<const ModelSequenceState*>(item.state);
    K3_CHECK(state != nullptr && state->op_log() == log_.get());
    StepItem step;
    step.slot = state->slot();
    step.start_pos = state->num_tokens();
    step.all_logits = item.all_logits;
    step.tokens.assign(item.tokens.begin(), item.tokens.end());
    if (state->paged()) {
      step.block_tokens = static_cast<int32_t>(state->block_tokens());
      step.blocks = state->block_ids();
    }
    plan.items.push_back(std::move(step));
  }
  K3_RETURN_IF_ERROR(Send(std::move(plan)));
  const Status forward = local_->Forward(batch, out);
  if (!forward.ok()) Fail(forward.WithPrefix("forward pass across ranks"));
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
  Status s = Send(std::move(plan));
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
        (void)Send(std::move(plan));
      }
    }
    lock.lock();
  }
}

// ---------------------------------------------------------------------------------------------------
// Ranks > 0.
namespace {

constexpr int32_t kMaxBlockId = 1 << 22;  // the KV cache's block table never holds more (kv_cache.cc)

// A worker's copy of rank 0's slots and MLA blocks.
class StateMirror {
 public:
  explicit StateMirror(const io::ModelConfig& cfg) : cfg_(cfg) {}

  Status Apply(const StateOp& op) {
    switch (op.kind) {
      case StateOpKind::kNew:
        K3_RETURN_IF_ERROR(Vacant(op.a));
        slots_[op.a] = std::make_unique<ModelSequenceState>(cfg_);
        return OkStatus();
      case StateOpKind::kClone: {
        K3_ASSIGN_OR_RETURN(ModelSequenceState * source, Find(op.a));
        K3_RETURN_IF_ERROR(Vacant(op.b));
        std::unique_ptr<SequenceState> copy = source->Clone();
        slots_[op.b].reset(static_cast<ModelSequenceState*>(copy.release()));
        return OkStatus();
      }
      case StateOpKind::kCopyKda: {
        K3_ASSIGN_OR_RETURN(ModelSequenceState * source, Find(op.a));
        K3_ASSIGN_OR_RETURN(ModelSequenceState * target, Find(op.b));
        for (int64_t i = 0; i < source->num_kda_layers(); ++i) target->kda(i) = source->kda(i);
        return OkStatus();
      }
      case StateOpKind::kFree:
        if (slots_.erase(op.a) == 0) return DataLoss("step plan frees slot {}, which does not exist", op.a);
        return OkStatus();
      case StateOpKind::kCopyBlock: {
        if (block_floats_ == 0 || blocks_.count(op.a) == 0)
          return DataLoss("step plan copies block {}, which was never written", op.a);
        K3_ASSIGN_OR_RETURN(float* target, Block(op.b));
        std::memcpy(target, blocks_.at(op.a).get(), sizeof(float) * static_cast<size_t>(block_floats_));
        return OkStatus();
      }
    }
    return DataLoss("step plan: unknown state op");
  }

  // The state of `item`, with its block table and position set from the plan.
  Result<ModelSequenceState*> Prepare(const StepItem& item) {
    K3_ASSIGN_OR_RETURN(ModelSequenceState * state, Find(item.slot));
    const int64_t end = item.start_pos + static_cast<int64_t>(item.tokens.size());
    for (int32_t id : item.tokens) {
      if (id < 0 || id >= cfg_.vocab_size)
        return DataLoss("step plan: token id {} is outside the vocabulary [0, {})", id, cfg_.vocab_size);
    }
    if (item.block_tokens == 0) {
      if (state->paged() || state->num_tokens() != item.start_pos) {
        return DataLoss("step plan: slot {} is at position {} here but {} on rank 0", item.slot,
                        state->num_tokens(), item.start_pos);
      }
      return state;
    }
    if (!state->paged()) {
      if (state->num_tokens() != 0 || state->num_blocks() != 0)
        return DataLoss("step plan: slot {} became paged after it was written", item.slot);
      state->SetExternalMlaBlocks(item.block_tokens);
    }
    if (state->block_tokens() != item.block_tokens)
      return DataLoss("step plan: slot {} has blocks of {} tokens, not {}", item.slot, state->block_tokens(),
                      item.block_tokens);
    if (static_cast<int64_t>(item.blocks.size()) * item.block_tokens < end)
      return DataLoss("step plan: slot {} has {} blocks for {} tokens", item.slot, item.blocks.size(), end);
    const int64_t floats = ModelSequenceState::MlaBlockFloats(cfg_, item.block_tokens);
    if (block_floats_ == 0) block_floats_ = std::max<int64_t>(floats, 1);
    if (block_floats_ != std::max<int64_t>(floats, 1))
      return DataLoss("step plan: block size changed from one step to the next");
    (void)state->ReleaseBlocks();
    for (int32_t id : item.blocks) {
      K3_ASSIGN_OR_RETURN(float* block, Block(id));
      state->AppendBlock(id, block);
    }
    state->SetNumTokens(item.start_pos);
    return state;
  }

 private:
  Status Vacant(int32_t slot) const {
    if (slots_.count(slot) != 0) return DataLoss("step plan reuses slot {} before freeing it", slot);
    return OkStatus();
  }
  Result<ModelSequenceState*> Find(int32_t slot) {
    auto it = slots_.find(slot);
    if (it == slots_.end()) return DataLoss("step plan names slot {}, which does not exist", slot);
    return it->second.get();
  }
  Result<float*> Block(int32_t id) {
    if (id < 0 || id >= kMaxBlockId) return DataLoss("step plan: block id {} is out of range", id);
    if (block_floats_ == 0) return DataLoss("step plan copies into block {} before any block size", id);
    auto& block = blocks_[id];
    if (block == nullptr) block = std::make_unique<float[]>(static_cast<size_t>(block_floats_));
    return block.get();
  }

  io::ModelConfig cfg_;
  std::unordered_map<int32_t, std::unique_ptr<ModelSequenceState>> slots_;
  std::unordered_map<int32_t, std::unique_ptr<float[]>> blocks_;
  int64_t block_floats_ = 0;
};

}  // namespace

Status RunWorker(Model& local, dist::Communicator& comm) {
  StateMirror mirror(local.state_config());
  ForwardOutput out;
  std::vector<SequenceBatchItem> batch;
  for (uint64_t expected = 1;; ++expected) {
    std::string bytes;
    Status received = dist::BroadcastBytes(comm, &bytes, /*root=*/0, kMaxPlanBytes);
    if (!received.ok()) return received.WithPrefix("waiting for rank 0's next step");
    K3_ASSIGN_OR_RETURN(StepPlan plan, DecodeStepPlan(bytes));
    if (plan.sequence != expected)
      return DataLoss("step plan {} arrived where {} was expected", plan.sequence, expected);
    if (plan.kind == StepKind::kShutdown) return OkStatus();
    if (plan.kind == StepKind::kHeartbeat) continue;
    for (const StateOp& op : plan.ops) K3_RETURN_IF_ERROR(mirror.Apply(op));
    batch.clear();
    std::unordered_set<int32_t> seen;
    for (const StepItem& item : plan.items) {
      if (!seen.insert(item.slot).second)
        return DataLoss("step plan: slot {} appears twice in one batch", item.slot);
      K3_ASSIGN_OR_RETURN(ModelSequenceState * state, mirror.Prepare(item));
      batch.push_back(SequenceBatchItem{state, item.tokens, item.all_logits});
    }
    if (batch.empty()) continue;
    K3_RETURN_IF_ERROR(local.Forward(batch, &out));
  }
}

Result<GroupMember> JoinGroupAndLoad(const std::string& dir, ThreadPool* pool, const dist::GroupPlan& plan,
                                     const std::string& fingerprint,
                                     std::function<void(const Status&)> on_failure) {
  GroupMember member;
  if (plan.world == 1) {
    K3_ASSIGN_OR_RETURN(member.model, Model::Load(dir, pool));
    return member;
  }
  // A layout the checkpoint cannot take is refused before any rank waits for another.
  K3_ASSIGN_OR_RETURN(io::ModelConfig cfg, io::LoadModelConfig(dir));
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
  auto local = Model::Load(dir, pool, Parallelism{shard, member.comm.get()});
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
