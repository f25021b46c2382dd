// ThreadGroup: one model on `world` thread ranks (ThreadCommunicators) for tests: rank 0 is a
// LeaderModel (a Model to drive like any other), ranks 1.. run RunWorker on their own threads.
#pragma once

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "src/model/rank_group.h"
#include "src/model/testing/random_model.h"

namespace k3::model::testing {

class ThreadGroup {
 public:
  ThreadGroup(const io::ModelConfig& cfg, std::shared_ptr<RandomTensors> tensors, int world,
              bool expert_parallel);
  ~ThreadGroup();
  LeaderModel& leader() { return *leader_; }
  // Shuts the workers down (once) and returns the first worker status that is not ok.
  Status Finish();

 private:
  std::vector<std::unique_ptr<dist::Communicator>> comms_;
  std::unique_ptr<LeaderModel> leader_;
  std::vector<std::unique_ptr<Model>> workers_;
  std::deque<Status> results_;
  std::vector<std::thread> threads_;
};

}  // namespace k3::model::testing
