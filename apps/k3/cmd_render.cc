// k3 render: writes the manifests / scripts / service JSON of one target into --out (flags ->
// deploy::Render -> files). `--out -` prints every file to stdout instead, each after a "# file:" line.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "apps/k3/commands.h"
#include "src/base/file.h"
#include "src/deploy/render.h"
#include "src/deploy/render_ops.h"
#include "src/deploy/render_output.h"

namespace k3::app {

void RegisterRenderCommand(CLI::App& app) {
  struct Flags {
    deploy::RenderOptions options;
    std::string engine = "vllm";
    std::string out;
    std::string parallel = "tp";
    std::string autoscale;  // MIN:MAX
    bool force = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("render", "Manifests and scripts for a deployment target");
  cmd->add_option("--target", flags->options.target,
                  "aws-hyperpod | aws-eks | azure-aks | azure-ml | gcp-gke | gcp-vertex | alibaba-pai-eas | "
                  "alibaba-ack | k8s")
      ->required();
  cmd->add_option("--engine", flags->engine, "vllm | k3")->capture_default_str();
  cmd->add_option("--out", flags->out, "output directory (default k3-deploy-TARGET; '-' = stdout)");
  cmd->add_flag("--force", flags->force,
                "delete files in --out that this render does not write (else such a folder is refused)");
  cmd->add_option("--image", flags->options.image, "container image (default vllm/vllm-openai:kimi-k3)");
  cmd->add_option("--replicas", flags->options.replicas, "serving groups")->capture_default_str();
  cmd->add_option("--weights", flags->options.weights, "hf://ORG/NAME | s3:// | az:// | gs:// | oss:// URI");
  cmd->add_option("--namespace", flags->options.name_space, "Kubernetes namespace written into metadata");
  cmd->add_option("--region", flags->options.region,
                  "the bucket's region where a file names it (aws-hyperpod with s3://, alibaba-ack)");
  cmd->add_flag("--gateway", flags->options.gateway,
                "Inference Gateway (Kubernetes targets): endpoint picker, InferencePool, InferenceObjective, "
                "Gateway, HTTPRoute");
  cmd->add_option("--gateway-impl", flags->options.gateway_impl,
                  "gateway implementation: kgateway (default) | istio; gcp-gke uses GKE's managed gateway");
  cmd->add_option("--compute", flags->options.compute,
                  "azure-ml: managed (default, a managed online endpoint) | kubernetes (Kubernetes compute: "
                  "the AzureML extension on an AKS cluster)");
  cmd->add_option("--autoscale", flags->autoscale,
                  "MIN:MAX serving groups, scaled on vllm:num_requests_waiting / vllm:kv_cache_usage_perc "
                  "(Kubernetes targets: KEDA or HPA; alibaba-pai-eas: the service's autoscaler)");
  cmd->add_option("--autoscaler", flags->options.autoscale.autoscaler,
                  "keda (ScaledObject, default) | hpa (HorizontalPodAutoscaler + prometheus-adapter)");
  cmd->add_option("--max-cold-start", flags->options.autoscale.max_cold_start_seconds,
                  "seconds of cold start (weight load) accepted for --autoscale 0:MAX (scale to zero)");
  cmd->add_option("--prometheus-url", flags->options.autoscale.prometheus_url,
                  "Prometheus API the autoscaler queries (default: the target's metrics stack)");
  cmd->add_flag("--monitoring", flags->options.monitoring,
                "scrape object of the platform's Prometheus + grafana-dashboard.json (vLLM metric names)");
  cmd->add_option("--model", flags->options.plan.model, "kimi-k3 | kimi-linear-48b | checkpoint DIR")
      ->capture_default_str();
  const auto& instances = deploy::EmbeddedCatalog();
  cmd->add_option("--instance", flags->options.plan.instance,
                  "instance type (default: the target's): " +
                      (instances.ok() ? instances->InstancesByCloud() : instances.status().ToString()));
  cmd->add_option("--max-model-len", flags->options.plan.max_model_len, "passed to the engine when set");
  cmd->add_option("--concurrency", flags->options.plan.concurrency, "sequences at max-model-len (sizing)");
  cmd->add_option("--weights-bandwidth", flags->options.plan.weights_bandwidth,
                  "storage read bandwidth (probes)")
      ->capture_default_str();
  cmd->add_option("--tensor-parallel-size", flags->options.plan.cpu.tensor_parallel_size,
                  "CPU instances with --engine k3: ranks in all (default: one per NUMA node of every node)");
  cmd->add_option("--parallel", flags->parallel,
                  "tp: TP over up to 8 GPUs (across two 4-GPU nodes) | tp-pp: TP = GPUs "
                  "per node, PP = nodes (the guide's TP=4 x PP=2)")
      ->capture_default_str();
  cmd->callback([flags] {
    if (flags->parallel != "tp" && flags->parallel != "tp-pp") {
      return FailCommand("render", "--parallel '" + flags->parallel + "': one of tp, tp-pp", 2);
    }
    flags->options.plan.prefer_pp = flags->parallel == "tp-pp";
    const auto& catalog = deploy::EmbeddedCatalog();
    if (!catalog.ok()) return FailCommand("render", catalog.status().ToString());
    auto engine = deploy::ParseEngine(flags->engine);
    if (!engine.ok()) return FailCommand("render", engine.status().message(), 2);
    flags->options.engine = *engine;
    if (!flags->autoscale.empty()) {
      Status range = deploy::ParseAutoscaleRange(flags->autoscale, flags->options.autoscale);
      if (!range.ok()) return FailCommand("render", range.message(), 2);
    }
    auto files = deploy::Render(*catalog, flags->options);
    if (!files.ok()) return FailCommand("render", files.status().message(), 2);
    if (flags->out == "-") {
      for (const auto& f : *files) std::printf("# file: %s\n%s", f.path.c_str(), f.content.c_str());
      return;
    }
    const std::string dir = flags->out.empty() ? "k3-deploy-" + flags->options.target : flags->out;
    auto removed = deploy::PrepareOutputDir(dir, *files, flags->force);
    if (!removed.ok()) return FailCommand("render", removed.status().message(), 2);
    for (const std::string& name : *removed)
      std::fprintf(stderr, "deleted %s/%s\n", dir.c_str(), name.c_str());
    std::error_code ec;
    for (const auto& f : *files) {
      const std::string path = (std::filesystem::path(dir) / f.path).string();
      Status status = WriteFileAtomic(path, f.content);
      if (!status.ok()) return FailCommand("render", status.ToString());
      if (f.path.size() > 3 && f.path.compare(f.path.size() - 3, 3, ".sh") == 0) {
        std::filesystem::permissions(path,
                                     std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec,
                                     std::filesystem::perm_options::add, ec);
      }
      std::printf("%s\n", path.c_str());
    }
  });
}

}  // namespace k3::app
