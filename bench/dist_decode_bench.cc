// bench/dist_decode: decode tokens/s of one model split over 2 rank processes x 1 thread against the
// same model in 1 process x 2 threads, on this machine, alternating (issue 14's bound: >= 85 %), and the
// communication share of a decode step (time inside the collectives on rank 0 over the step time).
//
// The communication share comes from Model::CollectiveSeconds (time rank 0 spends inside collectives).
// Rank 1 prints its peak resident memory at the end (it only ever loads its shard).
//   dist_decode_bench --model DIR [--tokens 32] [--repeats 5] [--prompt-len 16] [--expert-parallel 1]
//
// Each repetition: 1 process x 2 threads decodes --tokens tokens after a prompt; then 2 ranks (this
// binary re-run as rank 1 by dist::LocalRanks) do the same with 1 thread each. Medians are printed with
// their ratio, and the load average before and after (machines running this are often shared).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/machine_limits.h"
#include "src/base/check.h"
#include "src/base/thread_pool.h"
#include "src/dist/launch.h"
#include "src/model/model.h"
#include "src/model/rank_group.h"
#include "src/model/sequences.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

using k3::bench::LoadAverage;
using k3::bench::Median;

// Prefill `prompt_len` tokens, then decode `tokens` greedy-free steps (token ids cycle); returns the
// decode seconds.
double DecodeRun(k3::model::Model& model, int64_t prompt_len, int64_t tokens) {
  const int64_t vocab = model.config().vocab_size;
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  for (int64_t i = 0; i < prompt_len; ++i) prompt[i] = static_cast<int32_t>((i * 131 + 7) % vocab);
  k3::model::Sequences seqs(model);
  const int32_t state = seqs.New();
  k3::model::ForwardOutput out;
  k3::model::SequenceBatchItem item{state, prompt, false};
  K3_CHECK_OK(seqs.Forward(std::span(&item, 1), &out));
  const auto t0 = Clock::now();
  for (int64_t s = 0; s < tokens; ++s) {
    const int32_t id = static_cast<int32_t>((s * 31 + 5) % vocab);
    k3::model::SequenceBatchItem step{state, std::span<const int32_t>(&id, 1), false};
    K3_CHECK_OK(seqs.Forward(std::span(&step, 1), &out));
  }
  return Seconds(t0, Clock::now());
}

// A field of /proc/self/status in MB ("VmHWM", "RssFile", "RssAnon"); -1 when absent.
double StatusMb(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atof(line.c_str() + key.size() + 1) / 1024.0;
  }
  return -1;
}

// Bytes of the checkpoint's *.safetensors files, in MB.
double CheckpointMb(const std::string& dir) {
  double bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".safetensors") bytes += static_cast<double>(e.file_size());
  }
  return bytes / (1024.0 * 1024.0);
}

struct Args {
  std::string model;
  int64_t tokens = 32, repeats = 5, prompt_len = 16;
  bool expert_parallel = false;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model")
      a.model = v;
    else if (k == "--tokens")
      a.tokens = std::atoll(v.c_str());
    else if (k == "--repeats")
      a.repeats = std::atoll(v.c_str());
    else if (k == "--prompt-len")
      a.prompt_len = std::atoll(v.c_str());
    else if (k == "--expert-parallel")
      a.expert_parallel = v == "1";
  }
  if (a.model.empty() || a.tokens < 1 || a.repeats < 1) {
    std::fprintf(stderr,
                 "usage: dist_decode_bench --model DIR [--tokens 32] [--repeats 5] [--prompt-len 16] "
                 "[--expert-parallel 1]\n");
    return 2;
  }
  k3::dist::GroupFlags flags;
  flags.tensor_parallel_size = 2;
  flags.expert_parallel = a.expert_parallel;
  flags.master_port = 29500 + static_cast<int>(getpid() % 2000);
  flags.dist_timeout_s = 300;
  const char* port_env = std::getenv("K3_BENCH_MASTER_PORT");  // rank 1 gets rank 0's port this way
  if (port_env != nullptr) flags.master_port = std::atoi(port_env);
  setenv("K3_BENCH_MASTER_PORT", std::to_string(flags.master_port).c_str(), 1);
  auto plan = k3::dist::ResolveGroup(flags, [](const char* n) { return std::getenv(n); });
  K3_CHECK_OK(plan.status());
  auto fingerprint = k3::dist::GroupFingerprint("bench", a.model);
  K3_CHECK_OK(fingerprint.status());

  if (plan->rank != 0) {  // rank 1: join every repetition's group and follow rank 0
    for (int64_t r = 0; r < a.repeats; ++r) {
      k3::ThreadPool pool(1);
      k3::dist::GroupPlan repetition = *plan;
      repetition.master_port += static_cast<int>(r);  // a fresh group (and store) per repetition
      auto member = k3::model::JoinGroupAndLoad(a.model, &pool, repetition, *fingerprint, nullptr);
      K3_CHECK_OK(member.status());
      K3_CHECK_OK(k3::model::RunWorker(*member->model, *member->comm));
    }
    // Rank 1 only ever held its shard: its peak resident memory is what one rank of two costs.
    std::printf(
        "rank 1 of 2: peak resident %.0f MB (now: mapped weights %.0f MB, own memory %.0f MB) for a %.0f MB "
        "checkpoint\n",
        StatusMb("VmHWM"), StatusMb("RssFile"), StatusMb("RssAnon"), CheckpointMb(a.model));
    std::fflush(stdout);
    return 0;
  }

  std::printf("dist_decode_bench: %s, %lld decode tokens after %lld prompt tokens, %lld repetitions, %s\n",
              a.model.c_str(), static_cast<long long>(a.tokens), static_cast<long long>(a.prompt_len),
              static_cast<long long>(a.repeats), a.expert_parallel ? "TP+EP" : "TP");
  std::printf("load average before: %s\n", LoadAverage().c_str());
  std::vector<std::string> child_args(argv, argv + argc);
  auto children = k3::dist::LocalRanks::Start(child_args, *plan, [](int r, const std::string& what) {
    std::fprintf(stderr, "rank %d %s\n", r, what.c_str());
    std::_Exit(3);
  });
  K3_CHECK_OK(children.status());
  std::vector<double> one_tps, two_tps, comm_share;
  for (int64_t r = 0; r < a.repeats; ++r) {
    {
      k3::ThreadPool pool(2);
      auto model = k3::model::Model::Load(a.model, &pool);
      K3_CHECK_OK(model.status());
      (void)DecodeRun(**model, a.prompt_len, 2);  // touch the weights once
      one_tps.push_back(static_cast<double>(a.tokens) / DecodeRun(**model, a.prompt_len, a.tokens));
    }
    {
      k3::ThreadPool pool(1);
      k3::dist::GroupPlan repetition = *plan;
      repetition.master_port += static_cast<int>(r);
      auto member = k3::model::JoinGroupAndLoad(a.model, &pool, repetition, *fingerprint, nullptr);
      K3_CHECK_OK(member.status());
      (void)DecodeRun(*member->model, a.prompt_len, 2);
      const double comm_before = member->model->CollectiveSeconds();
      const double seconds = DecodeRun(*member->model, a.prompt_len, a.tokens);
      two_tps.push_back(static_cast<double>(a.tokens) / seconds);
      comm_share.push_back((member->model->CollectiveSeconds() - comm_before) / seconds);
      // Rank 1 exits as soon as the last group is shut down, while this process still unloads the model:
      // its exit is expected from before the shutdown on, or the watcher reports it (and exits with 3).
      if (r + 1 == a.repeats) (*children)->ExpectExit();
      K3_CHECK_OK(member->leader->Shutdown());
    }
    std::printf(
        "repetition %lld: 1 x 2 threads %.2f tok/s, 2 ranks x 1 thread %.2f tok/s (%.0f %% of the step in "
        "rank 0's collectives)\n",
        static_cast<long long>(r), one_tps.back(), two_tps.back(), 100.0 * comm_share.back());
    std::fflush(stdout);
  }
  (*children)->ExpectExit();  // already, unless there were no repetitions
  K3_CHECK_OK((*children)->Wait(std::chrono::seconds(60)));
  const double one = Median(one_tps), two = Median(two_tps);
  std::printf(
      "decode: 1 process x 2 threads %.2f tok/s, 2 ranks x 1 thread %.2f tok/s: %.0f %% (bound 85 %%)\n", one,
      two, 100.0 * two / one);
  std::printf(
      "communication: %.0f %% of a decode step on rank 0 (median; all-reduces, the plan broadcast and "
      "the logits gather, waiting for the slower rank included)\n",
      100.0 * Median(comm_share));
  std::printf("load average after: %s\n", LoadAverage().c_str());
  return 0;
}
