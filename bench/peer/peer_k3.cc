// bench/peer/peer_k3: the k3 half of the side-by-side benchmark with llama.cpp (bench/peer/run.py).
// One process is one measured run, so the driver can alternate it with llama.cpp's half run for run:
//   peer_k3 gen --preset mini-k3 --out DIR [--seed 0]
//       writes the generated checkpoint (model::GenerateCheckpoint; no tokenizer files, none are needed)
//   peer_k3 run --model DIR --threads N --prompt-ids 1,2,3 --decode-steps S
//       loads the model, warms it up on a throw-away sequence, then on a fresh sequence prefills the
//       prompt in one Forward and greedily decodes S tokens one step at a time.
// It prints one JSON line: the prefill and decode seconds, and the greedy tokens (the prefill's argmax
// first), which the driver compares with llama.cpp's for top-1 agreement.
//   peer_k3 score --model DIR --threads N --prompt-ids 1,2,3
//       one untimed Forward of the whole sequence with every row's logits (the prefill path); prints the
//       argmax after each position. The driver gives both engines the same sequence (a prompt and a greedy
//       continuation) and compares these position by position: top-1 agreement on a shared context, which
//       one early divergence of two free-running greedy decodes would otherwise hide.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/base/check.h"
#include "src/base/thread_pool.h"
#include "src/model/generator.h"
#include "src/model/greedy.h"
#include "src/model/model.h"
#include "src/model/sequences.h"

namespace {

using Clock = std::chrono::steady_clock;

// "1,2,3" -> {1, 2, 3}; empty on anything else.
std::vector<int32_t> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at < text.size()) {
    size_t used = 0;
    const size_t end = std::min(text.find(',', at), text.size());
    try {
      ids.push_back(std::stoi(text.substr(at, end - at), &used));
    } catch (const std::exception&) {
      return {};
    }
    if (used != end - at) return {};
    at = end + 1;
  }
  return ids;
}

int32_t ArgMax(std::span<const float> row) { return k3::model::TopLogits(row, 1).front().first; }

// Forwards `ids` on `slot` and returns the argmax of the last row.
int32_t Step(k3::model::Sequences& seqs, int32_t slot, std::span<const int32_t> ids, int64_t vocab) {
  k3::model::SequenceBatchItem item{slot, ids, false};
  k3::model::ForwardOutput out;
  K3_CHECK_OK(seqs.Forward(std::span<const k3::model::SequenceBatchItem>(&item, 1), &out));
  K3_CHECK(static_cast<int64_t>(out.logits.size()) >= vocab);
  return ArgMax(std::span<const float>(out.logits).last(static_cast<size_t>(vocab)));
}

const char* Flag(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

// The flags `run` and `score` share, and the loaded model; Open returns the exit code on failure (after
// saying why), 0 when loaded.
struct Session {
  int threads = 1;
  std::vector<int32_t> prompt;
  std::unique_ptr<k3::ThreadPool> pool;
  std::unique_ptr<k3::model::Model> model;

  int Open(const char* command, int argc, char** argv) {
    const std::string dir = Flag(argc, argv, "--model", "");
    threads = std::atoi(Flag(argc, argv, "--threads", "1"));
    prompt = ParseIds(Flag(argc, argv, "--prompt-ids", ""));
    if (dir.empty() || threads < 1 || prompt.empty()) {
      std::fprintf(stderr, "peer_k3 %s: needs --model DIR, --threads >= 1, --prompt-ids 1,2,3\n", command);
      return 2;
    }
    pool = std::make_unique<k3::ThreadPool>(static_cast<size_t>(threads));
    auto loaded = k3::model::Model::Load(dir, pool.get());
    if (!loaded.ok()) {
      std::fprintf(stderr, "peer_k3: %s\n", loaded.status().ToString().c_str());
      return 1;
    }
    model = std::move(*loaded);
    const int64_t vocab = model->config().vocab_size;
    for (int32_t id : prompt) {
      if (id < 0 || id >= vocab) {
        std::fprintf(stderr, "peer_k3: prompt id %d is outside the vocabulary [0, %lld)\n", id,
                     static_cast<long long>(vocab));
        return 2;
      }
    }
    return 0;
  }
};

int Run(int argc, char** argv) {
  const int64_t steps = std::atoll(Flag(argc, argv, "--decode-steps", "32"));
  if (steps < 0) {
    std::fprintf(stderr, "peer_k3 run: --decode-steps must be >= 0\n");
    return 2;
  }
  Session session;
  if (const int code = session.Open("run", argc, argv); code != 0) return code;
  k3::model::Model& model = *session.model;
  const std::vector<int32_t>& prompt = session.prompt;
  const int threads = session.threads;
  const int64_t prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t vocab = model.config().vocab_size;

  {  // warm-up: touches every mapped weight page a token reads, and the kernels' buffers
    k3::model::Sequences warm(model);
    const int32_t slot = warm.New();
    int32_t next = Step(warm, slot, std::span<const int32_t>(prompt).first(1), vocab);
    for (int i = 0; i < 2; ++i) next = Step(warm, slot, std::span<const int32_t>(&next, 1), vocab);
  }

  k3::model::Sequences seqs(model);
  const int32_t slot = seqs.New();
  std::vector<int32_t> tokens;
  const auto p0 = Clock::now();
  tokens.push_back(Step(seqs, slot, prompt, vocab));
  const auto p1 = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    tokens.push_back(Step(seqs, slot, std::span<const int32_t>(&tokens.back(), 1), vocab));
  }
  const auto p2 = Clock::now();

  std::string ids;
  for (int32_t t : tokens) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  std::printf(
      "{\"engine\": \"k3\", \"threads\": %d, \"prompt_tokens\": %lld, \"prefill_s\": %.6f, "
      "\"decode_tokens\": %lld, \"decode_s\": %.6f, \"tokens\": [%s]}\n",
      threads, static_cast<long long>(prompt_len), std::chrono::duration<double>(p1 - p0).count(),
      static_cast<long long>(steps), std::chrono::duration<double>(p2 - p1).count(), ids.c_str());
  return 0;
}

int Score(int argc, char** argv) {
  Session session;
  if (const int code = session.Open("score", argc, argv); code != 0) return code;
  const size_t vocab = static_cast<size_t>(session.model->config().vocab_size);
  k3::model::Sequences seqs(*session.model);
  const k3::model::SequenceBatchItem item{seqs.New(), session.prompt, /*all_logits=*/true};
  k3::model::ForwardOutput out;
  K3_CHECK_OK(seqs.Forward(std::span<const k3::model::SequenceBatchItem>(&item, 1), &out));
  K3_CHECK(out.logits.size() == session.prompt.size() * vocab);  // [positions, vocab]
  std::string ids;
  for (size_t p = 0; p < session.prompt.size(); ++p) {
    const int32_t top = ArgMax(std::span<const float>(out.logits).subspan(p * vocab, vocab));
    ids += (ids.empty() ? "" : ",") + std::to_string(top);
  }
  std::printf("{\"engine\": \"k3\", \"threads\": %d, \"argmax\": [%s]}\n", session.threads, ids.c_str());
  return 0;
}

int Gen(int argc, char** argv) {
  const std::string preset = Flag(argc, argv, "--preset", "mini-k3");
  const std::string out = Flag(argc, argv, "--out", "");
  const uint64_t seed = std::strtoull(Flag(argc, argv, "--seed", "0"), nullptr, 10);
  if (out.empty()) {
    std::fprintf(stderr, "peer_k3 gen: needs --out DIR\n");
    return 2;
  }
  const k3::Status status = k3::model::GenerateCheckpoint(preset, seed, out);
  if (!status.ok()) {
    std::fprintf(stderr, "peer_k3 gen: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "gen") == 0) return Gen(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "run") == 0) return Run(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "score") == 0) return Score(argc, argv);
  std::fprintf(stderr,
               "usage: peer_k3 gen --preset P --out DIR [--seed N]\n"
               "       peer_k3 run --model DIR --threads N --prompt-ids 1,2,3 --decode-steps S\n"
               "       peer_k3 score --model DIR --threads N --prompt-ids 1,2,3\n");
  return 2;
}
