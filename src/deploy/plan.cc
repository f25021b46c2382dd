// Builds a Plan from the catalog: fit table (guide §2.2), node counts and layouts per target (§2.3),
// cost ranges from catalog prices, weight load time and probe budgets.
#include "src/deploy/plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "src/deploy/checkpoint_size.h"

namespace k3::deploy {
namespace {

constexpr int kMaxNodesSearched = 64;
constexpr double kEngineStartSeconds = 600;  // allowance for compile, CUDA graphs, warm-up after loading
constexpr double kLoadSafetyFactor = 2.0;

CostRange CostFor(const Instance& instance, int billed_instances) {
  CostRange cost;
  cost.billed_instances = billed_instances;
  cost.prices = instance.prices;
  if (instance.prices.empty()) {
    cost.unknown_reason = instance.id + ": " + instance.price_note;
    return cost;
  }
  cost.known = true;
  double low = instance.prices.front().usd_per_hour, high = low;
  for (const Price& p : instance.prices) {
    low = std::min(low, p.usd_per_hour);
    high = std::max(high, p.usd_per_hour);
  }
  cost.low_per_hour = low * billed_instances;
  cost.high_per_hour = high * billed_instances;
  return cost;
}

// Notes and procurement text every target plan carries.
void AddTargetNotes(TargetPlan& tp) {
  if (tp.instance.CpuOnly()) {
    // The target's capacity notes are about GPU reservations; a CPU plan needs none of them.
    tp.notes.push_back(fmt::format(
        "CPU-only: {} is on-demand capacity (no reservation, Capacity Block or GPU driver); check the vCPU "
        "quota of its family ({} vCPUs per node) before creating the node pool.",
        tp.instance.id, tp.instance.vcpu));
    tp.notes.push_back("Cleanup: the CPU node pool bills per hour until deleted (cleanup.sh deletes it).");
  } else if (tp.instance.id != tp.target.default_instance) {
    // The target's capacity notes are the guide's, for its default instance: another instance gets its
    // own (`k3 plan --target T` without --instance shows the guide's).
    tp.notes.push_back(fmt::format(
        "Capacity: {} ({} x {} GPUs): request the vCPU quota of its family ({} vCPUs per node) and reserve "
        "it (reservation, capacity block or training plan) before creating the node pool.",
        tp.instance.id, tp.instance.gpu_count, tp.instance.gpu, tp.instance.vcpu));
    for (const std::string& c : tp.target.cleanup) tp.notes.push_back("Cleanup: " + c);
  } else {
    tp.notes = tp.target.capacity;
    for (const std::string& c : tp.target.cleanup) tp.notes.push_back("Cleanup: " + c);
  }
  if (tp.instance.cpu_arch == "arm64") {
    tp.notes.push_back(
        std::string(tp.instance.CpuOnly() ? "arm64 hosts" : "arm64 (Grace) hosts") +
        ": the image needs an arm64 variant; check with `docker manifest inspect` before deploying (guide "
        "caveat 2).");
  }
}

// A CPU-only instance: the k3 engine's ranks on CPU nodes (cpu_plan.h). vLLM's GPU build cannot serve there.
Result<TargetPlan> PlanCpuTarget(const ModelSpec& model, const PlanOptions& options,
                                 const MemoryAssumptions& assumptions, double bandwidth_bps, TargetPlan tp) {
  const Instance& instance = tp.instance;
  if (options.engine != Engine::kK3) {
    return InvalidArgument(
        "--instance {} is a CPU-only instance (no GPUs; data/catalog/instances.json gpu_count 0): the vLLM "
        "engine needs GPUs; plan it with --engine k3 (the k3 engine runs on CPUs), or pick a GPU --instance",
        instance.id);
  }
  const int want_tp = options.cpu.tensor_parallel_size;
  if (want_tp < 0) return InvalidArgument("--tensor-parallel-size {}: must be positive", want_tp);
  if (want_tp > 0 && model.kda_heads > 0 && model.kda_heads % want_tp != 0) {
    return InvalidArgument(
        "--tensor-parallel-size {}: does not divide the {} heads of {} (config.json "
        "linear_attn_config.num_heads); pick a divisor of {}",
        want_tp, model.kda_heads, model.id, model.kda_heads);
  }
  tp.cpu_only = true;
  tp.cpu = PlanCpu(model, instance, assumptions, options.cpu, want_tp > 0 ? want_tp : kMaxNodesSearched);
  if (!tp.cpu.fits) {
    const RamPerRank& r = tp.cpu.ram;
    return InvalidArgument(
        "--instance {}: {} does not fit: {} node(s) x {} rank(s) need {:.1f} GB of RAM per node ({:.1f} GB "
        "per rank) but {} has {} GiB ({:.1f} GB usable); lower --max-model-len or --concurrency, {}or pick "
        "an "
        "--instance with more RAM (instances.json ram_gib)",
        instance.id, model.id, tp.cpu.nodes, tp.cpu.ranks_per_node, r.node_need_gb, r.need_gb, instance.id,
        instance.ram_gib, r.node_usable_gb, want_tp > 0 ? "raise --tensor-parallel-size (more nodes), " : "");
  }
  tp.fits = true;
  tp.layout.nodes = tp.cpu.nodes;
  tp.layout.gpus_per_node = 0;
  tp.layout.tp = tp.cpu.tp();
  tp.layout.pp = 1;
  tp.replicas = options.replicas;
  const Target& target = tp.target;
  if (target.one_instance_per_replica && tp.layout.nodes > 1) {
    tp.warnings.push_back(fmt::format("{} serves one instance per replica, but the model needs {} x {}",
                                      target.id, tp.layout.nodes, instance.id));
  }
  if (!instance.CpuOnly()) {
    tp.warnings.push_back(fmt::format(
        "--engine k3 runs on CPUs: the {} x {} GPUs of each {} stay idle (the pods request none); a "
        "CPU-only --instance costs less",
        instance.gpu_count, instance.gpu, instance.id));
  }
  tp.cost = CostFor(instance, tp.layout.nodes * tp.replicas);
  tp.probes = DeriveProbeBudget(model.weight_bytes, bandwidth_bps);
  AddTargetNotes(tp);
  return tp;
}

}  // namespace

Result<double> ParseBandwidth(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.'))
    ++pos;
  const std::string number = text.substr(0, pos);
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double value = 0;
  try {
    size_t used = 0;
    value = number.empty() ? 0 : std::stod(number, &used);
    if (used != number.size()) value = 0;
  } catch (...) {
    value = 0;
  }
  // Bits per second (a NIC's rating) or bytes per second (what `k3 serve` and `k3 weights sync` measure).
  static const std::pair<const char*, double> kUnits[] = {{"tbps", 1e12},
                                                          {"gbps", 1e9},
                                                          {"mbps", 1e6},
                                                          {"gb/s", 8e9},
                                                          {"mb/s", 8e6},
                                                          {"tb/s", 8e12},
                                                          {"gib/s", 8.0 * (1 << 30)},
                                                          {"mib/s", 8.0 * (1 << 20)}};
  for (const auto& [name, scale] : kUnits) {
    if (unit == name && value > 0 && std::isfinite(value)) return value * scale;
  }
  return InvalidArgument(
      "--weights-bandwidth '{}': expected a positive number with a unit, e.g. 10Gbps, "
      "100Mbps, 2GB/s, 850MiB/s (the rate `k3 serve` logs after loading from a bucket)",
      text);
}

ProbeBudget DeriveProbeBudget(int64_t weight_bytes, double bandwidth_bps) {
  ProbeBudget p;
  p.load_seconds = static_cast<double>(weight_bytes) * 8.0 / bandwidth_bps;
  const double budget = kLoadSafetyFactor * p.load_seconds + kEngineStartSeconds;
  p.startup_failure_threshold = static_cast<int>(std::ceil(budget / p.startup_period_seconds));
  p.startup_budget_seconds = p.startup_failure_threshold * p.startup_period_seconds;
  return p;
}

Result<ModelSpec> ResolveModel(const Catalog& catalog, const std::string& model) {
  if (const ModelSpec* m = catalog.FindModel(model)) return *m;
  std::error_code ec;
  if (std::filesystem::exists(model, ec)) return ModelSpecFromCheckpoint(model);
  return InvalidArgument("--model '{}': not a catalog model ({}) and no such directory or config.json", model,
                         catalog.ModelIds());
}

Result<TargetPlan> PlanTarget(const Catalog& catalog, const ModelSpec& model, const Target& target,
                              const PlanOptions& options, const MemoryAssumptions& assumptions,
                              double bandwidth_bps) {
  TargetPlan tp;
  tp.target = target;
  const std::string instance_id = options.instance.empty() ? target.default_instance : options.instance;
  const Instance* instance = catalog.FindInstance(instance_id);
  if (instance == nullptr) {
    return InvalidArgument("--instance '{}': not in the catalog (data/catalog/instances.json): {}",
                           instance_id, catalog.InstanceIds());
  }
  if (!target.cloud.empty() && instance->cloud != target.cloud) {
    return InvalidArgument("--instance '{}' is an instance of {}; target {} runs on {}", instance_id,
                           instance->cloud, target.id, target.cloud);
  }
  tp.instance = *instance;
  // The k3 engine computes on CPUs (src/kernels): on a GPU instance its ranks live in host RAM and the GPUs
  // stay idle, so it is planned (RAM per rank, nodes) and rendered (no GPU request) as a CPU plan.
  if (instance->CpuOnly() || options.engine == Engine::kK3) {
    return PlanCpuTarget(model, options, assumptions, bandwidth_bps, std::move(tp));
  }
  if (options.cpu.tensor_parallel_size > 0) {
    tp.warnings.push_back(fmt::format(
        "--tensor-parallel-size {} applies to CPU-only instances; on {} GPUs the layout follows --parallel",
        options.cpu.tensor_parallel_size, instance_id));
  }
  if (!target.instance_prefix.empty() && instance_id.rfind(target.instance_prefix, 0) != 0) {
    tp.warnings.push_back(fmt::format("{} needs an instance type starting with '{}' (got {})", target.id,
                                      target.instance_prefix, instance_id));
  }
  for (int nodes = 1; nodes <= kMaxNodesSearched; ++nodes) {
    tp.layout = ChooseLayout(nodes, instance->gpu_count, options.prefer_pp);
    tp.per_gpu = EstimatePerGpu(model, tp.layout, instance->gpu_memory_gb, assumptions);
    if (tp.per_gpu.fits) {
      tp.fits = true;
      break;
    }
  }
  tp.replicas = options.replicas;
  // Tensor parallelism splits the attention heads: TP must divide them (vLLM refuses otherwise).
  if (model.kda_heads > 0 && model.kda_heads % tp.layout.tp != 0) {
    return InvalidArgument(
        "--target {}: TP={} ({} GPUs per {}) does not divide the {} heads of {} (config.json "
        "linear_attn_config.num_heads): pick an --instance whose GPU count divides {}",
        target.id, tp.layout.tp, instance->gpu_count, instance_id, model.kda_heads, model.id,
        model.kda_heads);
  }
  if (!tp.fits) {
    tp.warnings.push_back(
        fmt::format("the model does not fit on up to {} x {} at this context and concurrency",
                    kMaxNodesSearched, instance_id));
  }
  if (target.one_instance_per_replica && tp.layout.nodes > 1) {
    tp.warnings.push_back(
        fmt::format("{} serves one instance per replica, but the model needs {} x {}: choose "
                    "an instance with more GPU memory",
                    target.id, tp.layout.nodes, instance_id));
  }
  const int group_nodes = tp.layout.nodes * tp.replicas;
  if (target.node_pool_max > 0 && group_nodes > target.node_pool_max) {
    tp.warnings.push_back(fmt::format("{} nodes exceed the node-pool limit of {} (one NVL72 rack)",
                                      group_nodes, target.node_pool_max));
  }
  int billed = group_nodes;
  // The replica minimum is rack-unit purchasing (Vertex A4X): it binds rack-bound instances only.
  if (target.min_replicas > 0 && instance->rack_vms > 0 && billed < target.min_replicas) {
    tp.warnings.push_back(
        fmt::format("{} bills at least {} replicas (rack-unit purchasing): {} needed, {} paid", target.id,
                    target.min_replicas, group_nodes, target.min_replicas));
    billed = target.min_replicas;
  }
  tp.cost = CostFor(*instance, billed);
  tp.probes = DeriveProbeBudget(model.weight_bytes, bandwidth_bps);
  AddTargetNotes(tp);
  return tp;
}

Result<Plan> BuildPlan(const Catalog& catalog, const PlanOptions& options) {
  Plan plan;
  K3_ASSIGN_OR_RETURN(plan.model, ResolveModel(catalog, options.model));
  K3_ASSIGN_OR_RETURN(std::optional<VisionTowerSpec> tower,
                      VisionTowerFor(plan.model, options.model, catalog.FindModel(options.model) != nullptr));
  if (tower && options.vision) {
    plan.vision = PlanVision(*tower);
    plan.assumptions.vision_weight_bytes = plan.vision->weight_bytes();
    plan.assumptions.vision_in_weight_bytes = tower->in_weight_bytes;
    plan.assumptions.vision_activation_bytes = plan.vision->activation_bytes;
  }
  plan.vision_left_out = tower.has_value() && !options.vision;
  if (options.concurrency < 1)
    return InvalidArgument("--concurrency {}: must be at least 1", options.concurrency);
  if (options.replicas < 1) return InvalidArgument("--replicas {}: must be at least 1", options.replicas);
  if (options.max_model_len < 0)
    return InvalidArgument("--max-model-len {}: must be positive", options.max_model_len);
  if (options.overhead_gb_per_gpu < 0) return InvalidArgument("--overhead-gb must not be negative");
  if (plan.model.max_context > 0 && options.max_model_len > plan.model.max_context) {
    return InvalidArgument(
        "--max-model-len {}: above the {} token context of {} (catalog max_context / config.json "
        "max_position_embeddings); pass at most {}",
        options.max_model_len, plan.model.max_context, plan.model.id, plan.model.max_context);
  }
  plan.assumptions.max_model_len = options.max_model_len > 0 ? options.max_model_len : plan.model.max_context;
  if (plan.assumptions.max_model_len <= 0) {
    return InvalidArgument(
        "--max-model-len: the context length of '{}' is not in the catalog or its config; "
        "pass --max-model-len N",
        plan.model.id);
  }
  plan.assumptions.concurrency = options.concurrency;
  plan.assumptions.overhead_gb_per_gpu = options.overhead_gb_per_gpu;
  K3_ASSIGN_OR_RETURN(plan.bandwidth_bps, ParseBandwidth(options.weights_bandwidth));
  plan.bandwidth_text = options.weights_bandwidth;
  plan.totals = EstimateTotals(plan.model, plan.assumptions);

  for (const FitConfiguration& row : catalog.fit_table) {
    const Gpu* gpu = catalog.FindGpu(row.gpu);
    FitRow fit;
    fit.config = row;
    fit.total_vram_gb = gpu->memory_gb * row.count;
    const int per_node = std::min(row.count, catalog.fit_table_gpus_per_node);
    fit.layout = ChooseLayout(row.count / per_node, per_node, options.prefer_pp);
    fit.per_gpu = EstimatePerGpu(plan.model, fit.layout, gpu->memory_gb, plan.assumptions);
    plan.fit_table.push_back(fit);
  }

  std::vector<const Target*> targets;
  if (options.target.empty()) {
    for (const Target& t : catalog.targets) targets.push_back(&t);
  } else {
    const Target* t = catalog.FindTarget(options.target);
    if (t == nullptr)
      return InvalidArgument("--target '{}': unknown; one of {}", options.target, catalog.TargetIds());
    targets.push_back(t);
  }
  if (!options.instance.empty() && options.target.empty()) {
    return InvalidArgument("--instance needs --target (an instance belongs to one cloud)");
  }
  std::set<std::string> cited(plan.model.sources.begin(), plan.model.sources.end());
  cited.insert(catalog.fit_table_source);
  for (const Target* t : targets) {
    K3_ASSIGN_OR_RETURN(TargetPlan tp,
                        PlanTarget(catalog, plan.model, *t, options, plan.assumptions, plan.bandwidth_bps));
    for (const std::string& s : tp.instance.sources) cited.insert(s);
    for (const Price& p : tp.instance.prices) cited.insert(p.source);
    cited.insert(t->source);
    plan.targets.push_back(std::move(tp));
  }
  for (const std::string& key : cited) {
    auto it = catalog.sources.find(key);
    if (it != catalog.sources.end()) plan.sources_cited.push_back(it->second);
  }
  return plan;
}

}  // namespace k3::deploy
