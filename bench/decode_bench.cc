// bench/decode: end-to-end figures of the CPU engine on a generated checkpoint (e.g. mini-k3), each set
// against this machine's own limit measured in the same run (bench/machine_limits.h):
//   - start-to-first-token (Model::Load + a 1-token Forward) vs reading every shard from a warm page cache;
//   - decode tokens/s at batch 1, and the weight bytes one decode token touches (from the config: every
//     non-expert matrix, one embedding row, lm_head, top-k experts per MoE layer) -> effective bandwidth
//     vs measured memory read bandwidth;
//   - prefill tokens/s on a long prompt, as GEMM FLOP/s (2 x active matrix parameters per token) vs the
//     measured MatMulBf16 FLOP/s.
//   decode_bench --model DIR [--threads N] [--prompt-len 2048] [--decode-steps 32]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/machine_limits.h"
#include "src/base/thread_pool.h"
#include "src/io/dtype.h"
#include "src/model/model.h"
#include "src/model/tensors.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Bytes of every *.safetensors file in dir, read twice (the first pass warms the page cache); returns
// the seconds of the second pass.
double WarmReadSeconds(const std::string& dir, uint64_t* bytes) {
  std::vector<char> buffer(8 << 20);
  double seconds = 0.0;
  for (int pass = 0; pass < 2; ++pass) {
    *bytes = 0;
    const auto start = Clock::now();
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".safetensors") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
        *bytes += static_cast<uint64_t>(in.gcount());
      }
    }
    seconds = Seconds(start, Clock::now());
  }
  return seconds;
}

struct TokenCost {
  double decode_bytes = 0;   // weight bytes one decode token reads
  double matrix_params = 0;  // active matrix parameters per token (for 2 x FLOPs)
};

TokenCost CostPerToken(const k3::io::ModelConfig& cfg) {
  TokenCost cost;
  double one_expert_bytes = 0, one_expert_params = 0;
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < cfg.num_layers; ++l) moe_layers += cfg.LayerFfn(l) == k3::io::FfnKind::kMoe;
  for (const k3::model::TensorSpec& t : k3::model::ListTensors(cfg)) {
    double n = 1;
    for (int64_t d : t.shape) n *= static_cast<double>(d);
    const double bytes = n * static_cast<double>(k3::io::DTypeSize(t.dtype));
    const bool expert = t.name.find(".experts.") != std::string::npos;
    if (expert) {
      if (t.name.find(".experts.0.") != std::string::npos) {
        one_expert_bytes += bytes;
        if (t.init != k3::model::InitKind::kMxfp4Scale) {
          one_expert_params += t.init == k3::model::InitKind::kMxfp4Packed ? 2 * n : n;
        }
      }
    } else if (t.init == k3::model::InitKind::kEmbedding) {
      cost.decode_bytes += bytes / static_cast<double>(t.shape[0]);  // one row
    } else {
      cost.decode_bytes += bytes;
      if (t.shape.size() == 2 && t.shape[0] > 1) cost.matrix_params += n;
    }
  }
  const double experts = static_cast<double>(moe_layers * cfg.num_experts_per_token);
  cost.decode_bytes += experts * one_expert_bytes;
  cost.matrix_params += experts * one_expert_params;
  return cost;
}

void Forward(k3::model::Model& model, k3::model::SequenceState* state, const std::vector<int32_t>& ids) {
  k3::model::SequenceBatchItem item{state, ids, false};
  k3::model::ForwardOutput out;
  model.Forward(std::span<const k3::model::SequenceBatchItem>(&item, 1), &out);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  size_t threads = 0;
  int64_t prompt_len = 2048, decode_steps = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model")
      dir = argv[i + 1];
    else if (flag == "--threads")
      threads = std::strtoul(argv[i + 1], nullptr, 10);
    else if (flag == "--prompt-len")
      prompt_len = std::strtoll(argv[i + 1], nullptr, 10);
    else if (flag == "--decode-steps")
      decode_steps = std::strtoll(argv[i + 1], nullptr, 10);
  }
  if (dir.empty() || prompt_len < 1 || decode_steps < 1) {
    std::fprintf(stderr,
                 "usage: decode_bench --model DIR [--threads N] [--prompt-len 2048] [--decode-steps 32]\n");
    return 2;
  }
  k3::ThreadPool pool(threads);
  threads = pool.num_threads();

  uint64_t file_bytes = 0;
  const double read_s = WarmReadSeconds(dir, &file_bytes);
  const auto t0 = Clock::now();
  auto model = k3::model::Model::Load(dir, &pool);
  if (!model.ok()) {
    std::fprintf(stderr, "decode_bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  const auto t1 = Clock::now();
  const int32_t vocab = static_cast<int32_t>((*model)->config().vocab_size);
  {
    auto state = (*model)->NewSequenceState();
    Forward(**model, state.get(), {1});
  }
  const auto t2 = Clock::now();
  std::printf(
      "start-to-first-token: %.3f s (load %.3f s + first token %.3f s); warm read of %.2f GB: %.3f s "
      "(ratio %.2f)\n",
      Seconds(t0, t2), Seconds(t0, t1), Seconds(t1, t2), file_bytes / 1e9, read_s, Seconds(t0, t2) / read_s);

  const TokenCost cost = CostPerToken((*model)->config());
  // Decode at batch 1 after a 16-token prompt.
  std::vector<int32_t> prompt(16);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 13) % vocab);
  auto state = (*model)->NewSequenceState();
  Forward(**model, state.get(), prompt);
  const auto d0 = Clock::now();
  for (int64_t s = 0; s < decode_steps; ++s)
    Forward(**model, state.get(), {static_cast<int32_t>((s * 31) % vocab)});
  const double decode_s = Seconds(d0, Clock::now());
  const double tokens_per_s = static_cast<double>(decode_steps) / decode_s;
  const double bandwidth = k3::bench::MeasureMemoryReadBandwidth(size_t{1} << 30, threads, 5);
  const double effective = cost.decode_bytes * tokens_per_s / 1e9;
  std::printf(
      "decode batch 1: %.2f tokens/s; %.1f MB of weights per token -> %.2f GB/s effective vs %.2f GB/s "
      "measured read bandwidth (%.0f%%)\n",
      tokens_per_s, cost.decode_bytes / 1e6, effective, bandwidth, 100.0 * effective / bandwidth);

  // Prefill one long prompt.
  std::vector<int32_t> long_prompt(static_cast<size_t>(prompt_len));
  for (size_t i = 0; i < long_prompt.size(); ++i)
    long_prompt[i] = static_cast<int32_t>((i * 104729 + 7) % vocab);
  auto prefill_state = (*model)->NewSequenceState();
  const auto p0 = Clock::now();
  Forward(**model, prefill_state.get(), long_prompt);
  const double prefill_s = Seconds(p0, Clock::now());
  const double gflops = 2.0 * cost.matrix_params * static_cast<double>(prompt_len) / prefill_s / 1e9;
  const double matmul_gflops = k3::bench::MeasureMatMulFlops(threads, 3);
  std::printf(
      "prefill %lld tokens: %.2f s = %.1f tokens/s -> %.1f GFLOP/s in matrices vs %.1f GFLOP/s measured "
      "MatMulBf16 (%.0f%%)\n",
      static_cast<long long>(prompt_len), prefill_s, prompt_len / prefill_s, gflops, matmul_gflops,
      100.0 * gflops / matmul_gflops);
  std::printf("threads: %zu\n", threads);
  return 0;
}
