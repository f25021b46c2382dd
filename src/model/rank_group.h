// One model across ranks (spec/distributed.md, "One engine step across ranks").
//
//   rank 0:   auto leader = std::make_unique<LeaderModel>(std::move(local), comm);  // a Model
//             engine over leader; leader->Shutdown() at the end
//   rank > 0: Status s = RunWorker(*local, *comm);    // until rank 0 shuts down or the group breaks
//
// LeaderModel wraps rank 0's shard. Each Execute sends its StepPlan (the slot ops since the last plan +
// the batch by slot id, as the engine built it) to every rank, then executes it on rank 0's shard, whose
// collectives the workers join. While idle it sends a heartbeat plan every
// `heartbeat` so a worker waiting for work can tell a quiet leader from a dead one. A failed send or
// collective is sticky: every later Forward returns it and `on_failure` hears it once.
//
// RunWorker receives each plan and executes it on its own shard: its model's slots hold its heads' KDA
// states and the replicated MLA blocks, so the same ops and batch keep every rank in step. A malformed plan,
// an unknown slot or block, a sequence gap or a lost peer ends it with a Status; it never aborts on what it
// receives.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "src/dist/communicator.h"
#include "src/dist/launch.h"
#include "src/model/model.h"

namespace k3::model {

class LeaderModel final : public Model {
 public:
  LeaderModel(std::unique_ptr<Model> local, dist::Communicator* comm,
              std::chrono::milliseconds heartbeat = std::chrono::seconds(5),
              std::function<void(const Status&)> on_failure = nullptr);
  ~LeaderModel() override;

  const io::ModelConfig& config() const override { return local_->config(); }
  const io::ModelConfig& state_config() const override { return local_->state_config(); }
  const ShardSpec& shard() const override { return local_->shard(); }
  // Sends `plan` to every rank, then executes it here (the workers join its collectives).
  Status Execute(const StepPlan& plan, ForwardOutput* out) override;
  double CollectiveSeconds() const override { return local_->CollectiveSeconds() + plan_seconds_; }
  void SetKdaPrefillForm(KdaPrefillForm form) override { local_->SetKdaPrefillForm(form); }
  std::vector<std::span<const uint8_t>> ViewedStorage() const override { return local_->ViewedStorage(); }
  ImageEncoder* image_encoder() override { return local_->image_encoder(); }  // rank 0 encodes

  // Tells every worker to leave its loop (success) and stops the heartbeat. Idempotent.
  Status Shutdown();

 private:
  // comm_mu_ held.
  Status Send(const StepPlan& plan);
  void Fail(const Status& status);
  void HeartbeatLoop();

  std::unique_ptr<Model> local_;
  dist::Communicator* comm_;
  std::chrono::milliseconds heartbeat_;
  std::function<void(const Status&)> on_failure_;

  std::mutex comm_mu_;  // one plan (and its forward) at a time on the communicator
  uint64_t sequence_ = 0;
  std::atomic<double> plan_seconds_{0.0};  // time spent broadcasting plans (heartbeats included)
  Status failed_;
  bool shut_down_ = false;
  std::chrono::steady_clock::time_point last_sent_ = std::chrono::steady_clock::now();

  std::mutex heartbeat_mu_;
  std::condition_variable heartbeat_cv_;
  bool stop_heartbeat_ = false;
  std::thread heartbeat_thread_;
};

// Runs rank > 0 of a group until rank 0 shuts it down (Ok) or the group fails (the Status says why).
Status RunWorker(Model& local, dist::Communicator& comm);

// Once a group is serving, a collective or a heartbeat that takes longer than this means a lost rank
// (the start-up timeout, --dist-timeout, is longer: pods of a group start minutes apart). 45 s, so that
// a group whose collective never returns (Gloo does not always fail a send pending to a rank that died:
// seen once in ten kill tests, "Timed out waiting 60000ms for send operation to complete") still ends
// every process within 60 s: the timeout, 2 s answering 503, then the exit.
inline constexpr std::chrono::milliseconds kServingTimeout{45'000};
inline constexpr std::chrono::milliseconds kHeartbeatInterval{5'000};

// What one process of a group holds.
struct GroupMember {
  std::unique_ptr<dist::Communicator> comm;  // null in one process
  std::unique_ptr<Model> model;              // rank 0 (or one process): the model to serve; else the shard
  LeaderModel* leader = nullptr;             // rank 0 of a group: model.get()
};

// Joins the group of `plan` (rendezvous with every rank, fingerprints compared), loads this rank's shard
// of `dir`, waits until every rank has loaded (plan.timeout), then switches to kServingTimeout. Rank 0's
// model is a LeaderModel calling on_failure when the group breaks. One process (world 1): a plain load.
Result<GroupMember> JoinGroupAndLoad(const std::string& dir, ThreadPool* pool, const dist::GroupPlan& plan,
                                     const std::string& fingerprint,
                                     std::function<void(const Status&)> on_failure);

// The same for a model that is not a local directory (a bucket): `cfg` is its config (checked against the
// layout before any rank waits for another), and `load` loads this rank's shard given its Parallelism
// (shard spec and communicator; default-constructed in one process).
using ShardLoader = std::function<Result<std::unique_ptr<Model>>(const Parallelism& parallelism)>;
Result<GroupMember> JoinGroupAndLoadWith(const io::ModelConfig& cfg, const dist::GroupPlan& plan,
                                         const std::string& fingerprint,
                                         std::function<void(const Status&)> on_failure,
                                         const ShardLoader& load);

}  // namespace k3::model
