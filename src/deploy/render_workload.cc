// Deployment / LeaderWorkerSet + Service (see render_workload.h).
#include "src/deploy/render_workload.h"

#include <cctype>

#include "src/deploy/render_identity.h"
#include "src/deploy/render_k8s_common.h"

namespace k3::deploy {
namespace {

constexpr const char* kRayScript = "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh";

Doc GpuToleration() {
  return Doc{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
}

// The leader (or single-node) container: serves HTTP, carries the probes.
Doc ServingContainer(const RenderContext& ctx, const std::string& name, bool multi_node) {
  Doc c = Doc::object();
  c["name"] = name;
  c["image"] = ctx.image;
  if (ctx.options.engine == Engine::kVllm) {
    c["command"] = Doc::array({"/bin/bash", "-c"});
    std::string shell;
    if (multi_node) shell = std::string(kRayScript) + " \\\n  leader --ray_cluster_size=$(LWS_GROUP_SIZE);\n";
    c["args"] = Doc::array({shell + VllmServeShell(ctx.serve) + "\n"});
  } else {
    c["command"] = Doc::array({"k3"});
    c["args"] = K3ServeArgv(ctx.serve);
  }
  c["env"] = EngineEnvList(ctx, multi_node);
  if (Doc creds = BucketCredentialsEnvFrom(ctx); !creds.empty()) c["envFrom"] = creds;
  c["resources"] = ServingResources(ctx);
  c["ports"] = Doc::array({Doc{{"containerPort", ctx.serve.port}}});
  c["startupProbe"] = StartupProbe(ctx);
  c["readinessProbe"] = ReadinessProbe(ctx);
  c["livenessProbe"] = LivenessProbe(ctx);
  c["volumeMounts"] = WeightsAndShmMounts(ctx);
  return c;
}

Doc WorkerContainer(const RenderContext& ctx) {
  Doc c = Doc::object();
  c["name"] = ctx.options.engine == Engine::kVllm ? "vllm-worker" : "k3-worker";
  c["image"] = ctx.image;
  if (ctx.options.engine == Engine::kVllm) {
    c["command"] = Doc::array({"/bin/bash", "-c"});
    c["args"] = Doc::array({std::string(kRayScript) + " \\\n  worker --ray_address=$(LWS_LEADER_ADDRESS)\n"});
  } else {
    c["command"] = Doc::array({"k3"});
    c["args"] = K3ServeArgv(ctx.serve, K3Role::kWorker);
  }
  c["env"] = EngineEnvList(ctx, true);
  if (Doc creds = BucketCredentialsEnvFrom(ctx); !creds.empty()) c["envFrom"] = creds;
  c["resources"] = ServingResources(ctx);
  c["volumeMounts"] = WeightsAndShmMounts(ctx);
  return c;
}

Doc PodSpec(const RenderContext& ctx, const CloudOverlay& overlay, Doc container) {
  Doc spec = Doc::object();
  if (!overlay.node_selector.empty()) spec["nodeSelector"] = overlay.node_selector;
  if (!overlay.tolerations.empty()) spec["tolerations"] = overlay.tolerations;
  if (Doc sc = WeightsPodSecurityContext(ctx); !sc.empty()) spec["securityContext"] = sc;
  spec["containers"] = Doc::array({std::move(container)});
  spec["volumes"] = Doc::array();
  if (!ctx.stream_weights) spec["volumes"].push_back(WeightsVolume(ctx));
  spec["volumes"].push_back(ShmVolume(ctx.plan.layout.gpus_per_node));
  return spec;
}

std::string ContainerPrefix(const RenderContext& ctx) {
  return ctx.options.engine == Engine::kVllm ? "vllm" : "k3";
}

Doc Deployment(const RenderContext& ctx, const CloudOverlay& overlay) {
  Doc selector = {{"app.kubernetes.io/name", ctx.app_name}, {"app.kubernetes.io/component", "serving"}};
  Doc pod_labels = StandardLabels(ctx, "serving");
  Doc pod = PodSpec(ctx, overlay, ServingContainer(ctx, ContainerPrefix(ctx), false));
  AddWorkloadIdentity(ctx, pod, pod_labels);
  Doc spec = {{"replicas", ctx.plan.replicas},
              {"strategy", {{"type", "Recreate"}}},
              {"selector", {{"matchLabels", selector}}},
              {"template", {{"metadata", {{"labels", pod_labels}}}, {"spec", pod}}}};
  return Doc{{"apiVersion", "apps/v1"},
             {"kind", "Deployment"},
             {"metadata", ObjectMeta(ctx, WorkloadName(ctx), "serving")},
             {"spec", spec}};
}

Doc LeaderWorkerSet(const RenderContext& ctx, const CloudOverlay& overlay) {
  Doc leader_labels = {{"role", "leader"}};
  leader_labels.update(StandardLabels(ctx, "leader"));
  Doc worker_labels = StandardLabels(ctx, "worker");
  Doc lwt = Doc::object();
  lwt["size"] = ctx.plan.layout.nodes;
  lwt["restartPolicy"] = "RecreateGroupOnPodRestart";
  Doc leader = PodSpec(ctx, overlay, ServingContainer(ctx, ContainerPrefix(ctx) + "-leader", true));
  Doc worker = PodSpec(ctx, overlay, WorkerContainer(ctx));
  AddWorkloadIdentity(ctx, leader, leader_labels);
  AddWorkloadIdentity(ctx, worker, worker_labels);
  lwt["leaderTemplate"] = {{"metadata", {{"labels", leader_labels}}}, {"spec", leader}};
  lwt["workerTemplate"] = {{"metadata", {{"labels", worker_labels}}}, {"spec", worker}};
  return Doc{{"apiVersion", "leaderworkerset.x-k8s.io/v1"},
             {"kind", "LeaderWorkerSet"},
             {"metadata", ObjectMeta(ctx, WorkloadName(ctx), "serving")},
             {"spec", {{"replicas", ctx.plan.replicas}, {"leaderWorkerTemplate", lwt}}}};
}

}  // namespace

std::string WorkloadName(const RenderContext& ctx) { return ctx.app_name; }

std::string AksGpuPoolName(const RenderContext& ctx) {
  std::string name;
  for (char c : ctx.plan.instance.gpu) {
    if (std::isalnum(static_cast<unsigned char>(c))) name += static_cast<char>(std::tolower(c));
  }
  name = name.substr(0, 8) + "pool";
  return name;
}

CloudOverlay OverlayFor(const RenderContext& ctx) {
  CloudOverlay o;
  const std::string& target = ctx.plan.target.id;
  if (ctx.plan.instance.CpuOnly()) {
    // CPU nodes: the well-known instance-type label every cloud's nodes carry; no GPU taint to tolerate.
    o.node_selector["node.kubernetes.io/instance-type"] = ctx.plan.instance.id;
    const bool shared = ctx.plan.layout.nodes * ctx.max_replicas() > 1;
    if (target == "azure-aks") o.storage_class = "azurefile-csi-premium";
    if (target == "gcp-gke") o.storage_class = "premium-rwx";
    if (target == "aws-eks" && shared) o.storage_class = kEksSharedStorageClass;
    return o;
  }
  o.tolerations.push_back(GpuToleration());
  if (target == "azure-aks") {
    o.node_selector["agentpool"] = AksGpuPoolName(ctx);
    o.storage_class = "azurefile-csi-premium";
  } else if (target == "gcp-gke") {
    o.node_selector["cloud.google.com/gke-accelerator"] = ctx.plan.instance.gcp_accelerator;
    o.storage_class = "premium-rwx";
  } else if (target == "aws-eks") {
    o.node_selector["node.kubernetes.io/instance-type"] = ctx.plan.instance.id;
    // EBS (the default gp2 / gp3) is ReadWriteOnce: several pods share the weights through EFS.
    if (ctx.plan.layout.nodes * ctx.max_replicas() > 1) o.storage_class = kEksSharedStorageClass;
  } else {
    o.node_selector["nvidia.com/gpu.present"] = "true";
  }
  return o;
}

std::vector<Doc> ServingWorkload(const RenderContext& ctx, const CloudOverlay& overlay) {
  if (ctx.plan.layout.nodes == 1) {
    Doc selector = {{"app.kubernetes.io/name", ctx.app_name}, {"app.kubernetes.io/component", "serving"}};
    return {Deployment(ctx, overlay), ServingService(ctx, selector)};
  }
  Doc selector = {{"leaderworkerset.sigs.k8s.io/name", WorkloadName(ctx)}, {"role", "leader"}};
  return {LeaderWorkerSet(ctx, overlay), ServingService(ctx, selector)};
}

}  // namespace k3::deploy
