// Plan: what `k3 plan` computes and `k3 render` renders from. Pure data: model + target + options in,
// memory, layout, node count, cost range, load time and probe budgets out, every cost tied to a catalog
// price with its source.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/deploy/catalog.h"
#include "src/deploy/cpu_plan.h"
#include "src/deploy/engine_command.h"
#include "src/deploy/memory_plan.h"
#include "src/deploy/plan_vision.h"

namespace k3::deploy {

struct PlanOptions {
  std::string model = "kimi-k3";  // catalog id, checkpoint directory or config.json
  std::string target;             // "" = every target
  std::string instance;           // "" = the target's default
  int64_t max_model_len = 0;      // 0 = the model's context window
  int concurrency = 1;            // sequences that may each hold max_model_len tokens
  std::string weights_bandwidth = "10Gbps";
  bool prefer_pp = false;  // TP = GPUs per node, PP = nodes (the guide's TP=4/PP=2 alternative)
  int replicas = 1;
  double overhead_gb_per_gpu = 8.0;  // per GPU; on a CPU instance, the working margin per rank
  // The engine decides what a CPU-only instance means: k3 plans ranks on it (cpu_plan.h), vLLM refuses.
  Engine engine = Engine::kVllm;
  CpuAssumptions cpu;  // --tensor-parallel-size, --network-latency-us, --memory-efficiency
  // Count the vision tower (weights + one largest image's activations) on every GPU / rank when the
  // model has one; false: text-only serving (--no-vision; vLLM --limit-mm-per-prompt '{"image": 0}').
  bool vision = true;
};

// Parses "10Gbps", "100Mbps", "1Tbps", "2GB/s", "500MB/s" into bits per second.
Result<double> ParseBandwidth(const std::string& text);

struct CostRange {
  bool known = false;
  double low_per_hour = 0;  // for every billed instance together
  double high_per_hour = 0;
  int billed_instances = 0;
  std::vector<Price> prices;  // the catalog prices the range comes from
  std::string unknown_reason;
  static constexpr double kHoursPerMonth = 730;
};

// Startup / readiness / liveness probe budgets, derived from the weight load time.
struct ProbeBudget {
  double load_seconds = 0;         // weight bytes / bandwidth
  int startup_budget_seconds = 0;  // 2 x load + 600 s engine start (graphs, warm-up), rounded up
  int startup_period_seconds = 30;
  int startup_failure_threshold = 0;  // budget / period
  int readiness_period_seconds = 10;
  int readiness_failure_threshold = 3;
  int liveness_period_seconds = 30;
  int liveness_failure_threshold = 5;
};

struct TargetPlan {
  Target target;
  Instance instance;
  Layout layout;  // on a CPU instance: nodes, gpus_per_node 0, tp = ranks
  MemoryPerGpu per_gpu;
  bool cpu_only = false;  // the instance has no GPUs: `cpu` holds the plan
  CpuPlan cpu;
  bool fits = false;  // the model fits on layout.nodes instances
  int replicas = 1;
  CostRange cost;
  ProbeBudget probes;
  std::vector<std::string> notes;     // capacity procurement and platform notes
  std::vector<std::string> warnings;  // constraint violations (node pool, HyperPod, Vertex minimum)
};

struct FitRow {
  FitConfiguration config;
  double total_vram_gb = 0;
  Layout layout;
  MemoryPerGpu per_gpu;
};

struct Plan {
  ModelSpec model;
  MemoryAssumptions assumptions;
  MemoryTotals totals;
  std::optional<VisionPlan> vision;  // the model's tower, when it has one and options.vision
  bool vision_left_out = false;      // the model has a tower but --no-vision left it out
  double bandwidth_bps = 0;
  std::string bandwidth_text;
  std::vector<FitRow> fit_table;
  std::vector<TargetPlan> targets;
  std::vector<Source> sources_cited;  // every source a number in this plan comes from
};

// Resolves the model: a catalog id, else a checkpoint directory / config.json.
Result<ModelSpec> ResolveModel(const Catalog& catalog, const std::string& model);

// Plans one target (options.target) or all. Errors name the flag and the valid values.
Result<Plan> BuildPlan(const Catalog& catalog, const PlanOptions& options);

// Plans a single target and returns it (render uses this).
Result<TargetPlan> PlanTarget(const Catalog& catalog, const ModelSpec& model, const Target& target,
                              const PlanOptions& options, const MemoryAssumptions& assumptions,
                              double bandwidth_bps);

ProbeBudget DeriveProbeBudget(int64_t weight_bytes, double bandwidth_bps);

}  // namespace k3::deploy
