// ThreadPool: a fixed set of workers for fork-join loops inside kernels and the forward pass.
//
// ParallelFor(n, fn) runs fn(task, worker) for task in [0, n) on the calling thread plus the workers and
// returns when all tasks are done. Tasks are handed out one at a time from an atomic counter, so uneven
// tasks balance. Workers spin briefly before sleeping: a decode step issues hundreds of small loops and
// a condition-variable wake-up per loop would cost more than the loop.
// The caller never waits for a worker that has not joined the loop: a worker joins (under the mutex)
// only while the loop is open, and the caller closes it once every task is claimed, then waits only for
// the joined workers. On an oversubscribed machine (more runnable threads than cores) a descheduled
// worker therefore costs nothing; the caller runs the tasks itself.
// One ParallelFor at a time per pool (the engine thread owns the pool); nested calls run inline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace k3 {

class ThreadPool {
 public:
  // num_threads counts the caller: 1 means no workers (everything inline). 0 means hardware threads.
  explicit ThreadPool(size_t num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t num_threads() const { return workers_.size() + 1; }

  // fn(task_index, worker_index), worker_index in [0, num_threads()).
  void ParallelFor(size_t num_tasks, const std::function<void(size_t, size_t)>& fn);

  // A process-wide pool sized to the hardware (or K3_NUM_THREADS).
  static ThreadPool& Default();

 private:
  void WorkerLoop(size_t worker_index);
  void RunTasks(size_t worker_index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> in_loop_{false};
  bool accepting_ = false;                 // guarded by mu_: workers may join the current loop
  std::atomic<size_t> joined_workers_{0};  // workers inside RunTasks of the current loop

  // The current loop.
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  size_t num_tasks_ = 0;
  std::atomic<size_t> next_task_{0};
};

}  // namespace k3
