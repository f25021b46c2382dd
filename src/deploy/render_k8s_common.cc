// Kubernetes building blocks (see render_k8s_common.h).
#include "src/deploy/render_k8s_common.h"

#include <cmath>

#include "src/deploy/render_identity.h"
#include "src/deploy/units.h"

namespace k3::deploy {
namespace {
constexpr double kPvcHeadroom = 1.25;  // checkpoint + tokenizer/remote code + partial downloads
constexpr const char* kWeightsMountPath = "/mnt/models";
}  // namespace

Doc StandardLabels(const RenderContext& ctx, const std::string& component) {
  Doc labels = Doc::object();
  labels["app.kubernetes.io/name"] = ctx.app_name;
  labels["app.kubernetes.io/instance"] = ctx.app_name;
  labels["app.kubernetes.io/version"] = ctx.version;
  labels["app.kubernetes.io/component"] = component;
  labels["app.kubernetes.io/managed-by"] = "k3";
  return labels;
}

Doc ObjectMeta(const RenderContext& ctx, const std::string& name, const std::string& component) {
  Doc meta = Doc::object();
  meta["name"] = name;
  if (!ctx.options.name_space.empty()) meta["namespace"] = ctx.options.name_space;
  meta["labels"] = StandardLabels(ctx, component);
  return meta;
}

bool ValidRegion(const std::string& region) {
  if (region.empty() || region.size() > 40) return false;
  for (char c : region) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::string KubectlNamespace(const RenderContext& ctx) {
  return ctx.options.name_space.empty() ? "" : " -n " + ctx.options.name_space;
}

std::vector<RenderedFile> NamespaceFile(const RenderContext& ctx) {
  if (ctx.options.name_space.empty()) return {};
  Doc meta = Doc::object();
  meta["name"] = ctx.options.name_space;
  meta["labels"] = StandardLabels(ctx, "namespace");
  Doc ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", meta}};
  return {{"namespace.yaml",
           YamlFile({"The namespace every other file's objects live in: apply first, delete last"}, {ns})}};
}

static Doc HealthGet(const RenderContext& ctx) { return Doc{{"path", "/health"}, {"port", ctx.serve.port}}; }

Doc StartupProbe(const RenderContext& ctx) {
  const ProbeBudget& p = ctx.plan.probes;
  return Doc{{"httpGet", HealthGet(ctx)},
             {"periodSeconds", p.startup_period_seconds},
             {"failureThreshold", p.startup_failure_threshold}};
}

Doc ReadinessProbe(const RenderContext& ctx) {
  const ProbeBudget& p = ctx.plan.probes;
  return Doc{{"httpGet", HealthGet(ctx)},
             {"periodSeconds", p.readiness_period_seconds},
             {"failureThreshold", p.readiness_failure_threshold}};
}

Doc LivenessProbe(const RenderContext& ctx) {
  const ProbeBudget& p = ctx.plan.probes;
  return Doc{{"httpGet", HealthGet(ctx)},
             {"periodSeconds", p.liveness_period_seconds},
             {"failureThreshold", p.liveness_failure_threshold}};
}

Doc GpuResources(int gpus) {
  const std::string n = std::to_string(gpus);
  return Doc{{"limits", {{"nvidia.com/gpu", n}}}, {"requests", {{"nvidia.com/gpu", n}}}};
}

Doc CpuResources(const RenderContext& ctx) {
  const CpuPlan& cpu = ctx.plan.cpu;
  const auto gib = [](double gb) {
    return std::to_string(static_cast<long long>(std::ceil(gb * 1e9 / kGiB))) + "Gi";
  };
  const auto floor_gib = [](double gb) {
    return std::to_string(static_cast<long long>(std::floor(gb * 1e9 / kGiB))) + "Gi";
  };
  const std::string cpus = std::to_string(std::max(1, ctx.plan.instance.vcpu * 9 / 10));
  return Doc{{"limits", {{"memory", floor_gib(cpu.ram.node_usable_gb)}}},
             {"requests", {{"cpu", cpus}, {"memory", gib(cpu.ram.node_need_gb)}}}};
}

Doc ServingResources(const RenderContext& ctx) {
  return ctx.plan.cpu_only ? CpuResources(ctx) : GpuResources(ctx.plan.layout.gpus_per_node);
}

std::string WeightsClaimName(const RenderContext& ctx) { return ctx.app_name + "-weights"; }

Doc WeightsVolume(const RenderContext& ctx) {
  return Doc{{"name", "model-cache"}, {"persistentVolumeClaim", {{"claimName", WeightsClaimName(ctx)}}}};
}

Doc ShmVolume(int gpus_per_node) {
  // NCCL and the engine's worker processes exchange tensors through /dev/shm: 16 GiB per GPU (the guide
  // gives 64Gi to a 4-GPU pod).
  const int gib = 16 * std::max(1, gpus_per_node);
  return Doc{{"name", "dshm"},
             {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", std::to_string(gib) + "Gi"}}}};
}

Doc WeightsAndShmMounts(const RenderContext& ctx) {
  Doc mounts = Doc::array();
  if (!ctx.stream_weights) mounts.push_back(Doc{{"name", "model-cache"}, {"mountPath", kWeightsMountPath}});
  mounts.push_back(Doc{{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  return mounts;
}

Doc EngineEnvList(const RenderContext& ctx, bool multi_node) {
  Doc env = Doc::array();
  for (const auto& [name, value] : EngineEnv(ctx.model, ctx.options.engine)) {
    env.push_back(Doc{{"name", name}, {"value", value}});
  }
  // vLLM reads the pre-synced directory; offline, a missing file is an error instead of a second
  // 1.56 TB download into a volume sized for one copy. (`k3 serve` never downloads and reads no HF_*.)
  if (ctx.options.engine == Engine::kVllm) env.push_back(Doc{{"name", "HF_HUB_OFFLINE"}, {"value", "1"}});
  if (ctx.stream_weights && ctx.weights.scheme == "az" && ctx.options.engine == Engine::kVllm) {
    // RunAI Model Streamer's az:// names the container; the account comes from here, the credentials
    // from the pod's workload identity (DefaultAzureCredential; render_identity.h). k3 reads the account
    // from its URI and the workload identity webhook's AZURE_FEDERATED_TOKEN_FILE.
    env.push_back(Doc{{"name", "AZURE_STORAGE_ACCOUNT_NAME"}, {"value", ctx.weights.account}});
  }
  if (multi_node) {
    // Pod network interface for NCCL bootstrap and Gloo (Ray / torch.distributed); without them NCCL may
    // pick a wrong interface and hang at the first collective.
    env.push_back(Doc{{"name", "NCCL_SOCKET_IFNAME"}, {"value", "eth0"}});
    env.push_back(Doc{{"name", "GLOO_SOCKET_IFNAME"}, {"value", "eth0"}});
  }
  return env;
}

std::string BucketCredentialsSecret(const RenderContext& ctx) { return ctx.app_name + "-bucket-credentials"; }

Doc BucketCredentialsEnvFrom(const RenderContext& ctx) {
  if (!ctx.stream_weights || ctx.plan.target.id != "k8s") return Doc::array();
  return Doc::array({Doc{{"secretRef", {{"name", BucketCredentialsSecret(ctx)}}}}});
}

Doc WeightsPodSecurityContext(const RenderContext& ctx) {
  if (ctx.options.engine != Engine::kK3 || ctx.stream_weights) return Doc::object();
  return Doc{{"fsGroup", kK3ImageUid}, {"fsGroupChangePolicy", "OnRootMismatch"}};
}

int64_t WeightsPvcGib(const RenderContext& ctx) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(ctx.model.weight_bytes) * kPvcHeadroom / kGiB));
}

double WeightsVolumeReadBps(const RenderContext& ctx, std::string& why) {
  const std::string& t = ctx.plan.target.id;
  if (ctx.stream_weights) return 0;
  constexpr double kMiB = 1024.0 * 1024.0;
  const int64_t gib = WeightsPvcGib(ctx);
  if (t == "azure-aks") {
    const int64_t mib_s = 100 + static_cast<int64_t>(std::ceil(0.04 * static_cast<double>(gib))) +
                          static_cast<int64_t>(std::ceil(0.06 * static_cast<double>(gib)));
    why = fmt::format(
        "an Azure Files premium share of {} GiB gives 100 + ceil(0.04 x {}) + ceil(0.06 x {}) = {} MiB/s "
        "(Microsoft Learn, Azure Files scalability targets, provisioned v1)",
        gib, gib, gib, mib_s);
    return static_cast<double>(mib_s) * kMiB * 8;
  }
  const bool shared = ctx.plan.layout.nodes * ctx.max_replicas() > 1;
  if (t == "aws-eks" && !shared) {
    why =
        "an EBS volume of the cluster's default StorageClass reads at most 125 MiB/s (gp3 baseline; gp2 "
        "tops out at 250 MiB/s)";
    return 125 * kMiB * 8;
  }
  return 0;
}

Doc WeightsPvc(const RenderContext& ctx, const std::string& storage_class) {
  const long long gib = WeightsPvcGib(ctx);
  Doc spec = Doc::object();
  // More than one pod (nodes of a group, or replicas) mounts the volume: ReadWriteMany.
  const bool shared = ctx.plan.layout.nodes * ctx.max_replicas() > 1;
  spec["accessModes"] = Doc::array({shared ? "ReadWriteMany" : "ReadWriteOnce"});
  if (!storage_class.empty()) spec["storageClassName"] = storage_class;
  spec["resources"] = Doc{{"requests", {{"storage", std::to_string(gib) + "Gi"}}}};
  return Doc{{"apiVersion", "v1"},
             {"kind", "PersistentVolumeClaim"},
             {"metadata", ObjectMeta(ctx, WeightsClaimName(ctx), "weights")},
             {"spec", spec}};
}

namespace {

// The pre-sync container's image, command and environment.
struct PresyncContainer {
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
};

// --engine k3: `k3 weights sync SOURCE DIR` from the k3 image, the same tool and URI on every cloud. It
// skips what is there, resumes a partial copy after a pod restart, logs progress lines, and writes
// k3-manifest.json last (the engine's directory is complete only then). Credentials are the pod's cloud
// identity: on AWS the credential chain (IRSA, EKS Pod Identity, the node's instance profile); on AKS the
// workload identity webhook's AZURE_FEDERATED_TOKEN_FILE; on GKE the metadata server under Workload
// Identity Federation (render_identity.h); on a generic cluster the keys of a Secret (s3:// only).
PresyncContainer K3Presync(const RenderContext& ctx) {
  const WeightsSource& w = ctx.weights;
  PresyncContainer p;
  p.image = ctx.image;
  p.command = {"k3"};
  if (ctx.stream_weights) {
    // The bucket the server streams from, filled from the hub (a no-op once it holds an identical copy).
    p.args = {"weights", "sync", "hf://" + ctx.model.hf_id, w.uri, "--progress", "log"};
  } else {
    const std::string source = w.scheme == "hf" ? "hf://" + w.bucket + "/" + w.path : w.uri;
    p.args = {"weights", "sync", source, ctx.model_dir, "--progress", "log"};
  }
  return p;
}

// --engine vllm: the hub's own CLI in a Python image (the vLLM image has no k3). Object-store weights
// need no Job with vLLM: RunAI Model Streamer reads the bucket (RenderContext::stream_weights).
PresyncContainer HubPresync(const RenderContext& ctx) {
  const WeightsSource& w = ctx.weights;
  const std::string& dest = ctx.model_dir;
  // huggingface_hub 1.x: `huggingface-cli` is gone, `hf download` replaces it (hf_xet is built in).
  const std::string script = std::string("pip install --no-cache-dir 'huggingface_hub==") +
                             kHuggingFaceHubVersion + "' && hf download " + w.bucket + "/" + w.path +
                             " --local-dir " + dest;
  return PresyncContainer{
      "python:3.12-slim", {"/bin/sh", "-c"}, {"set -eu; mkdir -p " + dest + "; " + script}, {}};
}

}  // namespace

Doc PresyncJob(const RenderContext& ctx) {
  const PresyncContainer p = ctx.options.engine == Engine::kK3 ? K3Presync(ctx) : HubPresync(ctx);
  Doc container = {
      {"name", "presync"}, {"image", p.image}, {"command", Doc::array()}, {"args", Doc::array()}};
  if (!ctx.stream_weights)
    container["volumeMounts"] = Doc::array({Doc{{"name", "model-cache"}, {"mountPath", kWeightsMountPath}}});
  for (const std::string& c : p.command) container["command"].push_back(c);
  for (const std::string& a : p.args) container["args"].push_back(a);
  if (!p.env.empty()) {
    container["env"] = Doc::array();
    for (const auto& [name, value] : p.env) container["env"].push_back(Doc{{"name", name}, {"value", value}});
  }
  if (Doc creds = BucketCredentialsEnvFrom(ctx); !creds.empty()) container["envFrom"] = creds;
  Doc pod = {{"restartPolicy", "OnFailure"}, {"containers", Doc::array({container})}};
  if (Doc sc = WeightsPodSecurityContext(ctx); !sc.empty()) pod["securityContext"] = sc;
  if (!ctx.stream_weights) pod["volumes"] = Doc::array({WeightsVolume(ctx)});
  Doc labels = Doc::object();
  AddWorkloadIdentity(ctx, pod, labels);
  Doc tmpl = {{"spec", pod}};
  if (!labels.empty()) tmpl["metadata"] = {{"labels", labels}};
  return Doc{{"apiVersion", "batch/v1"},
             {"kind", "Job"},
             {"metadata", ObjectMeta(ctx, ctx.app_name + "-weights-presync", "weights")},
             {"spec", {{"backoffLimit", 3}, {"template", tmpl}}}};
}

Doc ServingService(const RenderContext& ctx, const Doc& selector) {
  return Doc{{"apiVersion", "v1"},
             {"kind", "Service"},
             {"metadata", ObjectMeta(ctx, ctx.app_name + "-svc", "serving")},
             {"spec",
              {{"type", "LoadBalancer"},
               {"selector", selector},
               {"ports", Doc::array({Doc{{"port", ctx.serve.port}, {"targetPort", ctx.serve.port}}})}}}};
}

}  // namespace k3::deploy
