// ThreadPool implementation: generation counter, spin-then-sleep workers, join-while-open protocol.
#include "src/base/thread_pool.h"

#include <cstdlib>
#include <string>

namespace k3 {
namespace {
// About 0.1-0.5 ms of pause instructions: long enough to catch the next loop of a decode step, short
// enough not to steal much of a core from other processes on a loaded machine.
constexpr int kSpinIterations = 4000;

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  for (size_t i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::Default() {
  static ThreadPool* pool = [] {
    size_t n = 0;
    if (const char* env = std::getenv("K3_NUM_THREADS")) n = std::strtoul(env, nullptr, 10);
    return new ThreadPool(n);
  }();
  return *pool;
}

void ThreadPool::RunTasks(size_t worker_index) {
  for (;;) {
    size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= num_tasks_) break;
    (*fn_)(task, worker_index);
  }
}

void ThreadPool::ParallelFor(size_t num_tasks, const std::function<void(size_t, size_t)>& fn) {
  if (num_tasks == 0) return;
  bool expected = false;
  if (workers_.empty() || num_tasks == 1 || !in_loop_.compare_exchange_strong(expected, true)) {
    for (size_t i = 0; i < num_tasks; ++i) fn(i, 0);  // inline: no workers, trivial, or nested
    return;
  }
  fn_ = &fn;
  num_tasks_ = num_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  RunTasks(0);
  // Every task is claimed. Close the loop so that no worker joins any more, then wait for the workers
  // that did join to finish their last task: spin briefly, then yield (a joined worker preempted on an
  // oversubscribed machine gets the core back instead of watching us spin).
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
  }
  for (int spins = 0; joined_workers_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinIterations) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
  fn_ = nullptr;
  in_loop_.store(false);
}

void ThreadPool::WorkerLoop(size_t worker_index) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      CpuRelax();
      ++spins;
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      if (stop_.load()) return;
      seen = generation_.load();
      if (!accepting_) continue;  // woke too late: that loop is already closed
      joined_workers_.fetch_add(1, std::memory_order_relaxed);
    }
    RunTasks(worker_index);
    joined_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace k3
