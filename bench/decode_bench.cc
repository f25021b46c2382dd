// bench/decode: end-to-end figures of the CPU engine on a generated checkpoint (e.g. mini-k3), each set
// against this machine's own limit measured in the same run (bench/machine_limits.h):
//   - start-to-first-token (Model::Load + a 1-token Forward) vs reading every shard from a warm page cache;
//     split into the load, the first Forward and a second Forward on a new sequence (the difference
//     between the two is the first touch of the mapped weights), beside the cost of touching every
//     page of a fresh mapping of the shards (what any mmap-based start pays on this machine: on a
//     virtual machine with shadow page tables it can exceed the warm read several times);
//   - decode tokens/s at batch 1, and the weight bytes one decode token touches (from the config: every
//     non-expert matrix, one embedding row, lm_head, top-k experts per MoE layer) -> effective bandwidth
//     vs measured memory read bandwidth;
//   - prefill tokens/s on a long prompt, as GEMM FLOP/s (2 x active matrix parameters per token) vs the
//     measured MatMulBf16 FLOP/s.
// Machines running this are often shared, so every figure is the median of --repeats runs (prefill:
// --prefill-repeats), and the load average (/proc/loadavg) is printed before and after. With
// --compare-bf16-paths 1 each decode repetition is paired with one on the fp32 path (ops.h), with
// --compare-overlap 1 with one whose matmul groups run in job order (SetMatMulOverlap(false), ops.h).
// With --context 8192,32768,131040 only long-context decode is measured (LongContextDecode): batch-1 decode
// after each N cached tokens with the MLA latent cache in bf16 (the default) and in fp32 words,
// alternating, against the bytes roofline, and the attention over the cache alone against the bandwidth.
// With --batch-sizes 4,16,64 only batched decode is measured (BatchedDecode): B sequences decoding in
// one batch, aggregate tokens/s against the rate the step's bytes allow at the measured bandwidth, the
// bytes from the actual routing (the distinct experts each step ran, plus every dense weight).
//   decode_bench --model DIR [--threads N] [--prompt-len 2048] [--decode-steps 32] [--repeats 5]
//                [--prefill-repeats 3] [--compare-bf16-paths 1] [--compare-overlap 1]
//                [--context 8192,32768]
//                [--batch-sizes 4,16,64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/machine_limits.h"
#include "src/base/check.h"
#include "src/base/file.h"
#include "src/base/thread_pool.h"
#include "src/io/dtype.h"
#include "src/kernels/ops.h"
#include "src/model/model.h"
#include "src/model/sequence_state.h"
#include "src/model/sequences.h"
#include "src/model/step_plan.h"
#include "src/model/tensors.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

using k3::bench::LoadAverage;

// The checkpoint's shards: every *.safetensors file in dir.
// This process's resident file-backed memory (Rss - Anonymous) and the part of it mapped with PMD (2 MiB)
// entries, in bytes, from /proc/self/smaps_rollup; {-1, -1} where the kernel does not report them.
struct FileMappedBytes {
  double resident = -1, pmd_mapped = -1;
};
FileMappedBytes FileMappedResidency() {
  std::ifstream rollup("/proc/self/smaps_rollup");
  std::string key;
  double rss = -1, anonymous = -1, pmd = -1, kib = 0;
  while (rollup >> key) {
    if (key == "Rss:" && rollup >> kib) rss = kib * 1024.0;
    if (key == "Anonymous:" && rollup >> kib) anonymous = kib * 1024.0;
    if (key == "FilePmdMapped:" && rollup >> kib) pmd = kib * 1024.0;
  }
  if (rss < 0 || anonymous < 0 || pmd < 0) return {};
  return {rss - anonymous, pmd};
}

std::vector<std::filesystem::path> ShardPaths(const std::string& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".safetensors") paths.push_back(entry.path());
  }
  return paths;
}

// Bytes of every *.safetensors file in dir, read 1 + `passes` times (the first pass warms the page
// cache); returns the seconds of each timed pass.
std::vector<double> WarmReadSeconds(const std::string& dir, int passes, uint64_t* bytes) {
  std::vector<char> buffer(8 << 20);
  std::vector<double> seconds;
  const std::vector<std::filesystem::path> shards = ShardPaths(dir);
  for (int pass = 0; pass <= passes; ++pass) {
    *bytes = 0;
    const auto start = Clock::now();
    for (const std::filesystem::path& shard : shards) {
      std::ifstream in(shard, std::ios::binary);
      while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
        *bytes += static_cast<uint64_t>(in.gcount());
      }
    }
    if (pass > 0) seconds.push_back(Seconds(start, Clock::now()));
  }
  return seconds;
}

// Seconds to map every *.safetensors file in dir afresh and read one byte of each 4 KiB page (the
// page cache is warm): the machine's cost of first touching mapped pages, paid by an mmap'd model on
// the pages its first token reads.
// The pages are touched by the pool's threads, 16 MiB at a time, as the model's kernels would.
double FreshMappingTouchSeconds(const std::string& dir, k3::ThreadPool* pool) {
  constexpr size_t kSlice = size_t{16} << 20;
  const std::vector<std::filesystem::path> shards = ShardPaths(dir);
  const auto start = Clock::now();
  std::vector<uint64_t> sums(pool->num_threads(), 0);
  for (const std::filesystem::path& shard : shards) {
    auto mapped = k3::MappedFile::Open(shard.string());
    if (!mapped.ok()) continue;
    const uint8_t* data = (*mapped)->data();
    const size_t size = (*mapped)->size();
    pool->ParallelFor((size + kSlice - 1) / kSlice, [&](size_t slice, size_t worker) {
      for (size_t offset = slice * kSlice; offset < std::min(size, (slice + 1) * kSlice); offset += 4096)
        sums[worker] += data[offset];
    });
  }
  const double seconds = Seconds(start, Clock::now());
  uint64_t sum = 0;
  for (uint64_t s : sums) sum += s;
  if (sum == 1) std::printf(" ");  // keeps the reads
  return seconds;
}

struct TokenCost {
  double decode_bytes = 0;   // weight bytes one decode token reads
  double matrix_params = 0;  // active matrix parameters per token (for 2 x FLOPs)
  double dense_bytes = 0;    // of decode_bytes, every byte but the routed experts' (one embedding row)
  double expert_bytes = 0;   // one routed expert of one layer, as stored
  double embedding_row_bytes = 0;
  int64_t moe_layers = 0;
};

TokenCost CostPerToken(const k3::io::ModelConfig& cfg) {
  TokenCost cost;
  // Expert 0 of every MoE layer, summed over the layers: one routed expert per layer.
  double expert0_bytes = 0, expert0_params = 0;
  for (const k3::model::TensorSpec& t : k3::model::ListTensors(cfg)) {
    double n = 1;
    for (int64_t d : t.shape) n *= static_cast<double>(d);
    const double bytes = n * static_cast<double>(k3::io::DTypeSize(t.dtype));
    const bool expert = t.name.find(".experts.") != std::string::npos;
    if (expert) {
      if (t.name.find(".experts.0.") != std::string::npos) {
        expert0_bytes += bytes;
        if (t.init != k3::model::InitKind::kMxfp4Scale) {
          expert0_params += t.init == k3::model::InitKind::kMxfp4Packed ? 2 * n : n;
        }
      }
    } else if (t.init == k3::model::InitKind::kEmbedding) {
      cost.decode_bytes += bytes / static_cast<double>(t.shape[0]);  // one row
      cost.embedding_row_bytes += bytes / static_cast<double>(t.shape[0]);
    } else {
      cost.decode_bytes += bytes;
      if (t.shape.size() == 2 && t.shape[0] > 1) cost.matrix_params += n;
    }
  }
  // Each MoE layer runs top-k experts (expert0_* already sums over the layers).
  cost.dense_bytes = cost.decode_bytes;
  for (int64_t l = 0; l < cfg.num_layers; ++l) cost.moe_layers += cfg.LayerFfn(l) == k3::io::FfnKind::kMoe;
  cost.expert_bytes = cost.moe_layers > 0 ? expert0_bytes / static_cast<double>(cost.moe_layers) : 0;
  const double experts = static_cast<double>(cfg.num_experts_per_token);
  cost.decode_bytes += experts * expert0_bytes;
  cost.matrix_params += experts * expert0_params;
  return cost;
}

// Parses "a,b,c" (each in [least, most]) onto *out; false on anything else.
bool ParseSizes(const char* text, int64_t least, int64_t most, std::vector<int64_t>* out) {
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    const int64_t v = std::strtoll(p, &end, 10);
    if (end == p || v < least || v > most || (*end != ',' && *end != '\0')) return false;
    out->push_back(v);
    p = *end == ',' ? end + 1 : end;
  }
  return !out->empty();
}

void Forward(k3::model::Sequences& seqs, int32_t slot, const std::vector<int32_t>& ids) {
  k3::model::SequenceBatchItem item{slot, ids, false};
  k3::model::ForwardOutput out;
  K3_CHECK_OK(seqs.Forward(std::span<const k3::model::SequenceBatchItem>(&item, 1), &out));
}

std::string Samples(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : " ") + std::to_string(x).substr(0, 6);
  return out;
}

// One repetition of an A/B in the same conditions: run(false) (the variant measured) and, with `compare`,
// run(true) (the baseline) right after it, or right before it in odd repetitions, so both see the same
// machine load. Appends tokens/s to *tps and *baseline_tps and their ratio to *speedups.
template <class Run>
void PairedRepetition(int64_t r, bool compare, Run&& run, std::vector<double>* tps,
                      std::vector<double>* baseline_tps, std::vector<double>* speedups) {
  const bool baseline_first = compare && r % 2 == 1;
  if (baseline_first) baseline_tps->push_back(run(true));
  tps->push_back(run(false));
  if (compare && !baseline_first) baseline_tps->push_back(run(true));
  if (compare) speedups->push_back(tps->back() / baseline_tps->back());
}

// Long-context decode (issue 18 item 4): batch-1 decode after N cached tokens, for each N of --context.
// The slot is paged, as in the engine (one block table, 64-token blocks): its first min(N, 1024) rows come
// from a real prefill, and the rest of the N rows are block copies of them (StateOpKind::kCopyBlock, the
// engine's copy-on-write op), since a 128k-token prefill would take hours here and decode time does not
// depend on the values it attends over. Per repetition, right after a read-bandwidth measurement, each
// cache dtype (bf16, then fp32 words; the order alternates) decodes --decode-steps tokens from position N
// and then from position 64 (one block: the same step without the long cache). Printed per N and dtype:
//   - tokens/s, and the ratio to the bytes roofline: weights a token reads (as for batch 1) + N cached
//     rows + the KDA states (read and written each step), at the measured bandwidth;
//   - the median step times at N and at 64 tokens;
//   - the attention over the cache alone: the median step's time above the median 64-token step, as the
//     cache bytes it read per second (item 4: >= 70 % of the bandwidth) and as FLOP/s (scores and context
//     sums, 2 x H x (2R + Rp) per cached row and MLA layer) against the measured MatMulBf16 rate.
void LongContextDecode(k3::model::Model& model, const std::vector<int64_t>& contexts, int64_t decode_steps,
                       int64_t repeats, size_t threads) {
  using k3::bench::Median;
  using k3::model::CacheDtype;
  using k3::model::StateOpKind;
  constexpr int32_t kBlockTokens = 64;
  constexpr int64_t kPrefixTokens = 1024;  // a multiple of kBlockTokens
  const k3::io::ModelConfig& cfg = model.config();
  const int32_t vocab = static_cast<int32_t>(cfg.vocab_size);
  const TokenCost cost = CostPerToken(cfg);
  const double kda_state_step_bytes =
      2.0 * static_cast<double>(cfg.num_kda_layers()) *
      static_cast<double>(cfg.kda_num_heads * cfg.kda_head_dim * cfg.kda_head_dim) * sizeof(float);
  const double attention_flops_per_row = 2.0 * static_cast<double>(cfg.num_mla_layers() * cfg.mla_num_heads) *
                                         static_cast<double>(2 * cfg.kv_lora_rank + cfg.qk_rope_head_dim);
  const double matmul_flops = k3::bench::MeasureMatMulFlops(threads, 3) * 1e9;
  std::printf("MatMulBf16: %.1f GFLOP/s; attention: %.0f FLOP per cached token (all MLA layers)\n",
              matmul_flops / 1e9, attention_flops_per_row);
  const CacheDtype dtypes[2] = {CacheDtype::kBf16, CacheDtype::kF32};
  uint64_t sequence = 0;
  auto execute = [&](k3::model::StepPlan plan) {
    plan.sequence = ++sequence;
    k3::model::ForwardOutput out;
    K3_CHECK_OK(model.Execute(plan, &out));
  };
  for (const int64_t context : contexts) {
    const int64_t prefix = std::min(kPrefixTokens, context);
    const int64_t prefix_blocks = (prefix + kBlockTokens - 1) / kBlockTokens;
    const int64_t num_blocks = (context + decode_steps + kBlockTokens - 1) / kBlockTokens;
    // Blocks 0 .. num_blocks - 1 in either dtype: their size differs, so each repetition makes the slot,
    // decodes, then frees it with its blocks before the other dtype's slot is made.
    std::vector<int32_t> table;
    for (int64_t b = 0; b < num_blocks; ++b) table.push_back(static_cast<int32_t>(b));
    auto item = [&](int d, int64_t start_pos, std::vector<int32_t> tokens) {
      k3::model::StepItem step;
      step.slot = 1;
      step.start_pos = start_pos;
      step.block_tokens = kBlockTokens;
      step.cache_dtype = dtypes[d];
      step.blocks = table;
      step.tokens = std::move(tokens);
      return step;
    };
    // Makes slot 1 in dtype d with `context` cached rows (a prefill of `prefix`, then block copies).
    auto build = [&](int d) {
      k3::model::StepPlan plan;
      plan.ops.push_back({StateOpKind::kNew, 1, static_cast<int32_t>(dtypes[d])});
      for (int64_t from = 0; from < prefix; from += kPrefixTokens / 2) {
        std::vector<int32_t> tokens;
        for (int64_t i = from; i < std::min(prefix, from + kPrefixTokens / 2); ++i)
          tokens.push_back(static_cast<int32_t>((i * 104729 + 7) % vocab));
        plan.items = {item(d, from, std::move(tokens))};
        execute(std::move(plan));
        plan = {};
      }
      for (int64_t b = prefix_blocks; b < num_blocks; ++b) {
        plan.ops.push_back(
            {StateOpKind::kCopyBlock, static_cast<int32_t>(b % prefix_blocks), static_cast<int32_t>(b)});
      }
      execute(std::move(plan));
    };
    auto release = [&] {
      k3::model::StepPlan plan;
      plan.ops = {{StateOpKind::kFree, 1, 0}, {StateOpKind::kReleaseBlocks, 0, 0}};
      execute(std::move(plan));
    };
    auto decode = [&](int d, int64_t start_pos, int64_t r) {
      const auto d0 = Clock::now();
      for (int64_t s = 0; s < decode_steps; ++s) {
        k3::model::StepPlan plan;
        plan.items = {item(d, start_pos + s, {static_cast<int32_t>((s * 31 + r) % vocab)})};
        execute(std::move(plan));
      }
      return Seconds(d0, Clock::now()) / static_cast<double>(decode_steps);
    };
    std::vector<double> tps[2], ratio[2], long_ms[2], short_ms[2], bandwidths;
    for (int64_t r = 0; r < repeats; ++r) {
      bandwidths.push_back(k3::bench::MeasureMemoryReadBandwidth(size_t{1} << 30, threads, 3) * 1e9);
      for (int k = 0; k < 2; ++k) {
        const int d = (k + r) % 2;
        build(d);
        const double long_step = decode(d, context, r);
        const double short_step = decode(d, kBlockTokens, r);
        release();
        const double cache_bytes =
            static_cast<double>(context * k3::model::ModelSequenceState::MlaBlockBytes(cfg, 1, dtypes[d]));
        tps[d].push_back(1.0 / long_step);
        ratio[d].push_back(tps[d].back() /
                           (bandwidths.back() / (cost.decode_bytes + cache_bytes + kda_state_step_bytes)));
        long_ms[d].push_back(1e3 * long_step);
        short_ms[d].push_back(1e3 * short_step);
      }
    }
    for (int d = 0; d < 2; ++d) {
      const double row_bytes =
          static_cast<double>(k3::model::ModelSequenceState::MlaBlockBytes(cfg, 1, dtypes[d]));
      // The attention over the cache alone: the median step's time above the median 64-token step.
      const double attention_s = (Median(long_ms[d]) - Median(short_ms[d])) / 1e3;
      const double attention_rows = static_cast<double>(context - kBlockTokens);
      std::printf(
          "decode batch 1 after %lld cached tokens, MLA cache %s (%.0f B/token, %.1f MB): median %.3f "
          "tokens/s [%s], %.0f%% of the bytes roofline (weights %.1f MB + cache + KDA states %.1f MB a "
          "token) [%s]; step %.1f ms [%s], after 64 tokens %.1f ms [%s]\n",
          static_cast<long long>(context), k3::model::CacheDtypeName(dtypes[d]), row_bytes,
          static_cast<double>(context) * row_bytes / 1e6, Median(tps[d]), Samples(tps[d]).c_str(),
          100.0 * Median(ratio[d]), cost.decode_bytes / 1e6, kda_state_step_bytes / 1e6,
          Samples(ratio[d]).c_str(), Median(long_ms[d]), Samples(long_ms[d]).c_str(), Median(short_ms[d]),
          Samples(short_ms[d]).c_str());
      if (attention_s <= 0) {
        std::printf("  attention over the cache: below this run's noise\n");
        continue;
      }
      std::printf(
          "  attention over the cache: %.1f ms a step = %.1f GB/s of cache = %.0f%% of the read bandwidth "
          "%.1f GB/s (target >= 70%%); %.1f GFLOP/s = %.0f%% of MatMulBf16 (%.1f FLOP per cache byte)\n",
          1e3 * attention_s, attention_rows * row_bytes / attention_s / 1e9,
          100.0 * attention_rows * row_bytes / attention_s / Median(bandwidths), Median(bandwidths) / 1e9,
          attention_rows * attention_flops_per_row / attention_s / 1e9,
          100.0 * attention_rows * attention_flops_per_row / attention_s / matmul_flops,
          attention_flops_per_row / row_bytes);
    }
  }
  std::printf("load average after: %s\n", LoadAverage().c_str());
}

// Batched decode (issue 18 item 3): for each B, B sequences each prefilled with its own 16-token prompt,
// then `decode_steps` steps with all B in one batch; per repetition the read bandwidth is measured right
// before. A step reads the dense weights once (with B embedding rows) and each distinct expert the step
// ran once (ForwardOutput::routed_experts_run, from the actual routing), so the rate those bytes allow is
// B tokens per (step bytes / bandwidth); printed: aggregate tokens/s, that roofline and their ratio
// (median of the per-repetition ratios), the unique experts per MoE layer per step, and the gain over B=1.
// With compare_overlap each repetition is paired with a run whose matmul groups run in job order.
// Beside it the compute limit, the measured MatMulBf16 FLOP/s over 2 x the active matrix parameters of a
// token: a batch can go no faster than the smaller of the two.
void BatchedDecode(k3::model::Model& model, const std::vector<int64_t>& batch_sizes, int64_t decode_steps,
                   int64_t repeats, size_t threads, bool compare_overlap) {
  using k3::bench::Median;
  const k3::io::ModelConfig& cfg = model.config();
  const TokenCost cost = CostPerToken(cfg);
  const int32_t vocab = static_cast<int32_t>(cfg.vocab_size);
  double batch1_tps = 0;
  const double matmul_flops = k3::bench::MeasureMatMulFlops(threads, 3) * 1e9;
  const double compute_tps = matmul_flops / (2.0 * cost.matrix_params);
  std::printf(
      "compute limit: %.1f GFLOP/s measured MatMulBf16 / (2 x %.1f M active matrix parameters a token) = "
      "%.1f tokens/s at any batch\n",
      matmul_flops / 1e9, cost.matrix_params / 1e6, compute_tps);
  // Not in the item's roofline: each sequence's KDA states (fp32 [H, K, K] per KDA layer), read and written
  // by every step. At mini-k3 size 9.4 MB a sequence, so about half of a batch-64 step's traffic.
  const double kda_state_step_bytes =
      2.0 * static_cast<double>(cfg.num_kda_layers()) *
      static_cast<double>(cfg.kda_num_heads * cfg.kda_head_dim * cfg.kda_head_dim) * sizeof(float);
  for (int64_t B : batch_sizes) {
    std::vector<double> tps, roofline, ratios, unique_per_layer, state_roofline, baseline_tps, speedups;
    // One run of B sequences: their prompts, then `decode_steps` timed batch steps, with the matmul overlap
    // off for the baseline. Returns tokens/s and adds the experts the steps ran to *experts_run (if given).
    auto run = [&](int64_t r, bool baseline, int64_t* experts_run) {
      if (baseline) k3::kernels::SetMatMulOverlap(false);
      k3::model::Sequences seqs(model);
      std::vector<int32_t> slots(static_cast<size_t>(B));
      std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(B), std::vector<int32_t>(16));
      std::vector<k3::model::SequenceBatchItem> items(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) {
        slots[b] = seqs.New();
        for (size_t i = 0; i < 16; ++i)
          prompts[b][i] = static_cast<int32_t>((i * 7919 + 13 + b * 104729 + r) % vocab);
        items[b] = {slots[b], prompts[b], false};
      }
      k3::model::ForwardOutput out;
      K3_CHECK_OK(seqs.Forward(items, &out));
      std::vector<std::vector<int32_t>> next(static_cast<size_t>(B), std::vector<int32_t>(1));
      const auto d0 = Clock::now();
      for (int64_t s = 0; s < decode_steps; ++s) {
        for (int64_t b = 0; b < B; ++b) {
          next[b][0] = static_cast<int32_t>((s * 31 + b * 7 + r) % vocab);
          items[b] = {slots[b], next[b], false};
        }
        K3_CHECK_OK(seqs.Forward(items, &out));
        if (experts_run != nullptr) *experts_run += out.routed_experts_run;
      }
      const double seconds = Seconds(d0, Clock::now());
      k3::kernels::SetMatMulOverlap(true);
      return static_cast<double>(B) * static_cast<double>(decode_steps) / seconds;
    };
    for (int64_t r = 0; r < repeats; ++r) {
      const double bandwidth = k3::bench::MeasureMemoryReadBandwidth(size_t{1} << 30, threads, 3) * 1e9;
      int64_t experts_run = 0;  // of the measured run
      PairedRepetition(
          r, compare_overlap,
          [&](bool baseline) { return run(r, baseline, baseline ? nullptr : &experts_run); }, &tps,
          &baseline_tps, &speedups);
      const double steps = static_cast<double>(decode_steps);
      const double step_bytes = cost.dense_bytes + static_cast<double>(B - 1) * cost.embedding_row_bytes +
                                static_cast<double>(experts_run) / steps * cost.expert_bytes;
      roofline.push_back(static_cast<double>(B) * bandwidth / step_bytes);
      ratios.push_back(tps.back() / roofline.back());
      state_roofline.push_back(static_cast<double>(B) * bandwidth /
                               (step_bytes + static_cast<double>(B) * kda_state_step_bytes));
      unique_per_layer.push_back(cost.moe_layers > 0 ? static_cast<double>(experts_run) / steps /
                                                           static_cast<double>(cost.moe_layers)
                                                     : 0);
    }
    if (B == 1) batch1_tps = Median(tps);
    std::printf(
        "decode batch %lld: median %.2f tokens/s [%s]; roofline %.2f tokens/s [%s] from %.1f distinct "
        "experts "
        "per MoE layer per step (of %lld; top-%lld x %lld tokens) -> median of the per-run ratios %.0f%% "
        "[%s] (target >= 80%%); %.0f%% of min(bytes, compute) roofline; %.0f%% of the bytes roofline with "
        "the "
        "KDA states (%.1f MB a sequence, read and written each step)%s\n",
        static_cast<long long>(B), Median(tps), Samples(tps).c_str(), Median(roofline),
        Samples(roofline).c_str(), Median(unique_per_layer), static_cast<long long>(cfg.num_experts),
        static_cast<long long>(cfg.num_experts_per_token), static_cast<long long>(B), 100.0 * Median(ratios),
        Samples(ratios).c_str(), 100.0 * Median(tps) / std::min(Median(roofline), compute_tps),
        100.0 * Median(tps) / Median(state_roofline), kda_state_step_bytes / 2e6,
        batch1_tps > 0 && B > 1 ? fmt::format("; {:.2f}x batch 1", Median(tps) / batch1_tps).c_str() : "");
    if (compare_overlap) {
      std::printf(
          "decode batch %lld with matmul overlap off (groups in job order), alternating with the runs above: "
          "median %.2f tokens/s [%s]; on / off per repetition: median %.3fx [%s]\n",
          static_cast<long long>(B), Median(baseline_tps), Samples(baseline_tps).c_str(), Median(speedups),
          Samples(speedups).c_str());
    }
  }
  std::printf("load average after: %s\n", LoadAverage().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  using k3::bench::Median;
  std::string dir;
  size_t threads = 0;
  int64_t prompt_len = 2048, decode_steps = 32, repeats = 5, prefill_repeats = 3;
  bool compare_bf16_paths = false, compare_overlap = false;
  std::vector<int64_t> batch_sizes, contexts;
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
    else if (flag == "--repeats")
      repeats = std::strtoll(argv[i + 1], nullptr, 10);
    else if (flag == "--compare-bf16-paths")
      compare_bf16_paths = std::strtoll(argv[i + 1], nullptr, 10) != 0;
    else if (flag == "--compare-overlap")
      compare_overlap = std::strtoll(argv[i + 1], nullptr, 10) != 0;
    else if (flag == "--prefill-repeats")
      prefill_repeats = std::strtoll(argv[i + 1], nullptr, 10);
    else if (flag == "--batch-sizes" || flag == "--context") {
      std::vector<int64_t>& list = flag == "--context" ? contexts : batch_sizes;
      const int64_t most = flag == "--context" ? (int64_t{1} << 24) : 4096;
      const int64_t least = flag == "--context" ? 128 : 1;
      if (!ParseSizes(argv[i + 1], least, most, &list)) {
        std::fprintf(stderr, "decode_bench: %s %s: expected sizes like %s\n", flag.c_str(), argv[i + 1],
                     flag == "--context" ? "8192,32768,131040 (at least 128)" : "1,4,16,64");
        return 2;
      }
    }
  }
  if (dir.empty() || prompt_len < 1 || decode_steps < 1 || repeats < 1 || prefill_repeats < 0) {
    std::fprintf(stderr,
                 "usage: decode_bench --model DIR [--threads N] [--prompt-len 2048] [--decode-steps 32] "
                 "[--repeats 5] [--prefill-repeats 3] [--compare-bf16-paths 1] [--compare-overlap 1] "
                 "[--context 8192,32768] [--batch-sizes 1,4,16,64]\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure appears as soon as it is measured
  k3::ThreadPool pool(threads);
  threads = pool.num_threads();
  std::printf("load average before: %s; threads: %zu; medians of %lld runs (prefill: %lld)\n",
              LoadAverage().c_str(), threads, static_cast<long long>(repeats),
              static_cast<long long>(prefill_repeats));

  if (!contexts.empty()) {
    auto loaded = k3::model::Model::Load(dir, &pool);
    if (!loaded.ok()) {
      std::fprintf(stderr, "decode_bench: %s\n", loaded.status().ToString().c_str());
      return 1;
    }
    LongContextDecode(**loaded, contexts, decode_steps, repeats, threads);
    return 0;
  }
  if (!batch_sizes.empty()) {
    auto loaded = k3::model::Model::Load(dir, &pool);
    if (!loaded.ok()) {
      std::fprintf(stderr, "decode_bench: %s\n", loaded.status().ToString().c_str());
      return 1;
    }
    BatchedDecode(**loaded, batch_sizes, decode_steps, repeats, threads, compare_overlap);
    return 0;
  }

  // Start-to-first-token: Model::Load + a 1-token Forward, against reading the shards from a warm page
  // cache (the read passes interleave with the loads, so both see the same machine load).
  uint64_t file_bytes = 0;
  std::vector<double> read_s, start_s, load_s, first_s, second_s, touch_s;
  // The first reader of an uncached file decides its page-cache folio sizes: through the loader's
  // MADV_HUGEPAGE mapping they are 2 MiB, through read() (the warm-read baseline below) mostly smaller.
  // Touch the shards through such a mapping first, as `k3 serve` would on a cold start.
  FreshMappingTouchSeconds(dir, &pool);
  std::unique_ptr<k3::model::Model> model;
  for (int64_t r = 0; r < repeats; ++r) {
    read_s.push_back(WarmReadSeconds(dir, 1, &file_bytes).at(0));
    model.reset();
    const auto t0 = Clock::now();
    auto loaded = k3::model::Model::Load(dir, &pool);
    if (!loaded.ok()) {
      std::fprintf(stderr, "decode_bench: %s\n", loaded.status().ToString().c_str());
      return 1;
    }
    const auto t1 = Clock::now();
    model = std::move(loaded).value();
    const auto t2 = Clock::now();
    {
      k3::model::Sequences state_seqs(*model);
      const int32_t state = state_seqs.New();
      Forward(state_seqs, state, {1});
    }
    const auto t3 = Clock::now();
    {
      k3::model::Sequences state_seqs(*model);
      const int32_t state = state_seqs.New();
      Forward(state_seqs, state, {1});
    }
    start_s.push_back(Seconds(t0, t3));
    load_s.push_back(Seconds(t0, t1));
    first_s.push_back(Seconds(t2, t3));
    second_s.push_back(Seconds(t3, Clock::now()));
    touch_s.push_back(FreshMappingTouchSeconds(dir, &pool));
  }
  const TokenCost cost = CostPerToken(model->config());
  const double touch_rate = file_bytes / Median(touch_s);  // bytes/s
  const double first_touch_overhead = Median(first_s) - Median(second_s);
  std::printf(
      "start-to-first-token: median %.3f s [%s] = load %.3f s + first Forward %.3f s (a second Forward on "
      "a "
      "new sequence: %.3f s); warm read of %.2f GB: median %.3f s [%s] -> ratio %.2f (acceptance <= 1.5)\n"
      "  first touch of a fresh mapping of the shards (one read per 4 KiB page, on the pool): %.2f GB/s, "
      "median %.3f s "
      "[%s]; the first Forward's extra %.3f s over the second is %.2f GB/s over the %.2f GB one token "
      "reads (%.0f%% of the touch rate; the start cannot beat load + %.3f s touch + a Forward = %.3f s)\n",
      Median(start_s), Samples(start_s).c_str(), Median(load_s), Median(first_s), Median(second_s),
      file_bytes / 1e9, Median(read_s), Samples(read_s).c_str(), Median(start_s) / Median(read_s),
      touch_rate / 1e9, Median(touch_s), Samples(touch_s).c_str(), first_touch_overhead,
      cost.decode_bytes / first_touch_overhead / 1e9, cost.decode_bytes / 1e9,
      100.0 * cost.decode_bytes / first_touch_overhead / touch_rate, cost.decode_bytes / touch_rate,
      Median(load_s) + cost.decode_bytes / touch_rate + Median(second_s));

  const int32_t vocab = static_cast<int32_t>(model->config().vocab_size);
  // Decode at batch 1 after a 16-token prompt; one fresh sequence per repetition.
  // Each repetition measures the read bandwidth right before its decode run, so that both see the same
  // machine load; the ratio is the median of the per-repetition ratios.
  // With --compare-bf16-paths each repetition also decodes with the bf16 dot products off (ops.h), with
  // --compare-overlap with the matmul overlap off, right after (or, every other repetition, right before) the
  // run with them, for an A/B in the same conditions.
  const bool compare_dp = compare_bf16_paths && k3::kernels::Bf16DotProductsActive();
  const bool compare = compare_dp || compare_overlap;
  auto decode_run = [&](int64_t r, bool baseline) {
    if (baseline && compare_dp) k3::kernels::SetBf16DotProducts(false);
    if (baseline && compare_overlap) k3::kernels::SetMatMulOverlap(false);
    std::vector<int32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 13 + r) % vocab);
    k3::model::Sequences state_seqs(*model);
    const int32_t state = state_seqs.New();
    Forward(state_seqs, state, prompt);
    const auto d0 = Clock::now();
    for (int64_t s = 0; s < decode_steps; ++s)
      Forward(state_seqs, state, {static_cast<int32_t>((s * 31 + r) % vocab)});
    const double tps = static_cast<double>(decode_steps) / Seconds(d0, Clock::now());
    k3::kernels::SetBf16DotProducts(true);
    k3::kernels::SetMatMulOverlap(true);
    return tps;
  };
  std::vector<double> decode_tps, bandwidths, ratios, baseline_tps, speedups;
  for (int64_t r = 0; r < repeats; ++r) {
    bandwidths.push_back(k3::bench::MeasureMemoryReadBandwidth(size_t{1} << 30, threads, 3));
    PairedRepetition(
        r, compare, [&](bool baseline) { return decode_run(r, baseline); }, &decode_tps, &baseline_tps,
        &speedups);
    ratios.push_back(cost.decode_bytes * decode_tps.back() / 1e9 / bandwidths.back());
  }
  const double tokens_per_s = Median(decode_tps);
  // How much of the checkpoint the model reaches through 2 MiB page-table entries (experts never routed
  // to are not mapped at all): weights on 4 KiB entries streamed at ~0.6x the speed here
  // (src/io/atomic_file.h).
  const FileMappedBytes mapped = FileMappedResidency();
  if (mapped.resident > 0) {
    std::printf(
        "file pages mapped (weights, binary): %.2f GB, of which on 2 MiB page-table entries %.2f GB "
        "(%.0f%%)\n",
        mapped.resident / 1e9, mapped.pmd_mapped / 1e9, 100.0 * mapped.pmd_mapped / mapped.resident);
  }
  std::printf(
      "decode batch 1: median %.2f tokens/s [%s]; %.1f MB of weights per token -> %.2f GB/s effective vs "
      "%.2f GB/s measured read bandwidth [%s] (median of the per-run ratios %.0f%% [%s]; acceptance >= "
      "50%%)\n",
      tokens_per_s, Samples(decode_tps).c_str(), cost.decode_bytes / 1e6,
      cost.decode_bytes * tokens_per_s / 1e9, Median(bandwidths), Samples(bandwidths).c_str(),
      100.0 * Median(ratios), Samples(ratios).c_str());
  if (compare) {
    const std::string off = compare_dp && compare_overlap ? "bf16 dot products and matmul overlap off"
                            : compare_dp                  ? "bf16 dot products off (fp32 path)"
                                                          : "matmul overlap off (groups in job order)";
    std::printf(
        "decode batch 1 with %s, alternating with the runs above: median %.2f tokens/s [%s]; on / off per "
        "repetition: median %.3fx [%s]\n",
        off.c_str(), Median(baseline_tps), Samples(baseline_tps).c_str(), Median(speedups),
        Samples(speedups).c_str());
  }

  // Prefill one long prompt.
  if (prefill_repeats > 0) {
    std::vector<int32_t> long_prompt(static_cast<size_t>(prompt_len));
    for (size_t i = 0; i < long_prompt.size(); ++i)
      long_prompt[i] = static_cast<int32_t>((i * 104729 + 7) % vocab);
    std::vector<double> prefill_s;
    for (int64_t r = 0; r < prefill_repeats; ++r) {
      k3::model::Sequences prefill_state_seqs(*model);
      const int32_t prefill_state = prefill_state_seqs.New();
      const auto p0 = Clock::now();
      Forward(prefill_state_seqs, prefill_state, long_prompt);
      prefill_s.push_back(Seconds(p0, Clock::now()));
    }
    const double seconds = Median(prefill_s);
    const double gflops = 2.0 * cost.matrix_params * static_cast<double>(prompt_len) / seconds / 1e9;
    const double matmul_gflops = k3::bench::MeasureMatMulFlops(threads, 3);
    std::printf(
        "prefill %lld tokens: median %.2f s [%s] = %.1f tokens/s -> %.1f GFLOP/s in matrices vs %.1f "
        "GFLOP/s "
        "measured MatMulBf16 (%.0f%%)\n",
        static_cast<long long>(prompt_len), seconds, Samples(prefill_s).c_str(), prompt_len / seconds, gflops,
        matmul_gflops, 100.0 * gflops / matmul_gflops);
  }
  std::printf("load average after: %s\n", LoadAverage().c_str());
  return 0;
}
