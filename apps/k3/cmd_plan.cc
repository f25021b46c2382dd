// k3 plan: capacity, layout, cost and load-time plan for a model on one or every deployment target.
// Flags -> deploy::BuildPlan -> deploy::FormatPlan; no logic here.
#include <cstdio>
#include <memory>
#include <string>

#include "apps/k3/commands.h"
#include "src/deploy/plan.h"
#include "src/deploy/plan_format.h"

namespace k3::app {

void RegisterPlanCommand(CLI::App& app) {
  struct Flags {
    deploy::PlanOptions options;
    std::string format = "table";
    std::string parallel = "tp";
    std::string engine = "vllm";
    bool no_vision = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Memory, parallel layout, node count, cost and load time per target");
  cmd->add_option("--model", flags->options.model, "kimi-k3 | kimi-linear-48b | checkpoint DIR | config.json")
      ->capture_default_str();
  cmd->add_option("--target", flags->options.target, "one target (default: all)");
  const auto& instances = deploy::EmbeddedCatalog();
  cmd->add_option("--instance", flags->options.instance,
                  "instance type (default: the target's): " +
                      (instances.ok() ? instances->InstancesByCloud() : instances.status().ToString()));
  cmd->add_option("--max-model-len", flags->options.max_model_len,
                  "tokens per sequence (default: model context)");
  cmd->add_option("--concurrency", flags->options.concurrency, "sequences at max-model-len")
      ->capture_default_str();
  cmd->add_option("--weights-bandwidth", flags->options.weights_bandwidth,
                  "storage read bandwidth (10Gbps, 2GB/s)")
      ->capture_default_str();
  cmd->add_option("--replicas", flags->options.replicas, "serving groups")->capture_default_str();
  cmd->add_option("--overhead-gb", flags->options.overhead_gb_per_gpu,
                  "per-GPU allowance for context/activations")
      ->capture_default_str();
  cmd->add_option("--parallel", flags->parallel,
                  "tp: TP over up to 8 GPUs (across two 4-GPU nodes) | tp-pp: TP = GPUs "
                  "per node, PP = nodes (the guide's TP=4 x PP=2)")
      ->capture_default_str();
  cmd->add_option("--engine", flags->engine,
                  "vllm | k3 (k3 also plans CPU-only instances: RAM per rank, nodes, decode tokens/s)")
      ->capture_default_str();
  cmd->add_option("--tensor-parallel-size", flags->options.cpu.tensor_parallel_size,
                  "CPU instances: ranks in all (default: one per NUMA node of every node)");
  cmd->add_option("--network-latency-us", flags->options.cpu.inter_node_latency_us,
                  "CPU instances: latency of one all-reduce ring step between nodes")
      ->capture_default_str();
  cmd->add_option("--memory-efficiency", flags->options.cpu.memory_efficiency,
                  "CPU instances: sustained fraction of peak DRAM bandwidth")
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "table | json | markdown")->capture_default_str();
  cmd->add_flag(
      "--no-vision", flags->no_vision,
      "leave the vision tower out (text-only serving); by default a model's tower is counted: a whole "
      "tower + one largest image per GPU / rank");
  cmd->callback([flags] {
    if (flags->parallel != "tp" && flags->parallel != "tp-pp") {
      return FailCommand("plan", "--parallel '" + flags->parallel + "': one of tp, tp-pp", 2);
    }
    flags->options.prefer_pp = flags->parallel == "tp-pp";
    flags->options.vision = !flags->no_vision;
    auto engine = deploy::ParseEngine(flags->engine);
    if (!engine.ok()) return FailCommand("plan", engine.status().message(), 2);
    flags->options.engine = *engine;
    const auto& catalog = deploy::EmbeddedCatalog();
    if (!catalog.ok()) return FailCommand("plan", catalog.status().ToString());
    auto format = deploy::ParsePlanFormat(flags->format);
    if (!format.ok()) return FailCommand("plan", format.status().message(), 2);
    auto plan = deploy::BuildPlan(*catalog, flags->options);
    if (!plan.ok()) return FailCommand("plan", plan.status().message(), 2);
    std::fputs(deploy::FormatPlan(*plan, *format).c_str(), stdout);
  });
}

}  // namespace k3::app
