// ThreadGroup (thread_group.h).
#include "src/model/testing/thread_group.h"

#include "src/base/check.h"
#include "src/model/testing/thread_communicator.h"

namespace k3::model::testing {

ThreadGroup::ThreadGroup(const io::ModelConfig& cfg, std::shared_ptr<RandomTensors> tensors, int world,
                         bool expert_parallel)
    : comms_(MakeThreadCommunicators(world)) {
  auto lookup = [tensors](const std::string& name) { return tensors->Find(name); };
  for (int r = 0; r < world; ++r) {
    Parallelism par{ShardSpec{r, world, expert_parallel}, comms_[r].get()};
    auto m = Model::FromTensors(cfg, lookup, tensors, nullptr, par);
    K3_CHECK_OK(m.status());
    if (r == 0) {
      leader_ = std::make_unique<LeaderModel>(std::move(*m), comms_[0].get());
    } else {
      workers_.push_back(std::move(*m));
    }
  }
  for (size_t i = 0; i < workers_.size(); ++i) {
    results_.emplace_back();
    threads_.emplace_back([this, i] { results_[i] = RunWorker(*workers_[i], *comms_[i + 1]); });
  }
}

ThreadGroup::~ThreadGroup() { (void)Finish(); }

Status ThreadGroup::Finish() {
  if (!threads_.empty()) {
    (void)leader_->Shutdown();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  for (const Status& s : results_) {
    if (!s.ok()) return s;
  }
  return OkStatus();
}

}  // namespace k3::model::testing
