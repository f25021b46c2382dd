// Alibaba targets: alibaba-pai-eas (EAS service JSON with an OSS mount and autoscaler; field notes in
// spec/pai-eas-service-json.md; a group of several instances is a distributed unit) and alibaba-ack
// (arena command + KServe InferenceService in RawDeployment mode over an OSS-backed PVC for one node, a
// LeaderWorkerSet for several). Both read oss:// weights only.
#include <cmath>

#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_multinode.h"
#include "src/deploy/render_ops.h"
#include "src/deploy/render_scripts.h"

namespace k3::deploy {
namespace {

constexpr const char* kModelMount = "/mnt/models";

// Render refuses every other scheme on the Alibaba targets (CheckWeightsScheme): the URI is oss://.
std::string OssPath(const RenderContext& ctx) {
  return "oss://" + ctx.weights.bucket + "/" + (ctx.weights.path.empty() ? "" : ctx.weights.path + "/");
}

// The Secret with the OSS AccessKey the CSI driver mounts the bucket with (created by the apply steps).
std::string OssSecretName(const RenderContext& ctx) { return ctx.app_name + "-oss-secret"; }
std::string Namespace(const RenderContext& ctx) {
  return ctx.options.name_space.empty() ? "default" : ctx.options.name_space;
}

std::string ServeShell(const RenderContext& ctx) {
  ServeSpec serve = ctx.serve;
  serve.model_ref = std::string(kModelMount) + "/" + ctx.model.served_name;
  return ctx.options.engine == Engine::kVllm ? VllmServeShell(serve) : K3ServeShell(serve);
}

std::string OneLine(std::string shell) {
  std::string out;
  for (size_t i = 0; i < shell.size(); ++i) {
    if (shell[i] == '\\' && i + 1 < shell.size() && shell[i + 1] == '\n') {
      i += 1;
      while (i + 1 < shell.size() && shell[i + 1] == ' ') ++i;
      out += ' ';
      continue;
    }
    out += shell[i];
  }
  return out;
}

}  // namespace

Result<std::vector<RenderedFile>> RenderPaiEas(const RenderContext& ctx) {
  const ProbeBudget& p = ctx.plan.probes;
  std::string service_name;
  for (char c : ctx.app_name) service_name += c == '-' ? '_' : c;
  Doc env = Doc::array();
  for (const auto& [name, value] : EngineEnv(ctx.model, ctx.options.engine)) {
    env.push_back(Doc{{"name", name}, {"value", value}});
  }
  Doc check = {{"http_get", {{"path", "/health"}, {"port", ctx.serve.port}}}};
  Doc startup = check;
  startup["period_seconds"] = p.startup_period_seconds;
  startup["failure_threshold"] = p.startup_failure_threshold;
  Doc health = check;
  health["period_seconds"] = p.readiness_period_seconds;
  health["failure_threshold"] = p.readiness_failure_threshold;
  // A group of several instances is one EAS distributed unit (render_multinode.h): each instance starts
  // the engine for its RANK_ID, and instance 0 takes the traffic.
  const int unit_size = ctx.plan.layout.nodes;
  const std::string script = unit_size > 1
                                 ? EasUnitScript(ctx, std::string(kModelMount) + "/" + ctx.model.served_name)
                                 : OneLine(ServeShell(ctx));
  Doc container = {{"image", ctx.image}, {"port", ctx.serve.port},   {"script", script},
                   {"env", env},         {"startup_check", startup}, {"health_check", health}};
  // Dedicated resource group (quota) instead of public instances; VPC and GPU driver filled by
  // deploy-eas.sh from the environment (spec pai-eas-service-json.md: metadata.resource, cloud.networking,
  // features).
  Doc service = {
      {"metadata",
       {{"name", service_name},
        {"instance", ctx.plan.replicas},
        {"resource", "${EAS_RESOURCE_ID}"},
        // k3 computes on the host CPUs: no GPU, and the memory its ranks need (MB); vLLM the GPUs.
        {"gpu", ctx.plan.cpu_only ? 0 : ctx.plan.instance.gpu_count},
        {"cpu", ctx.plan.instance.vcpu},
        {"memory", ctx.plan.cpu_only
                       ? static_cast<int64_t>(std::ceil(ctx.plan.cpu.ram.node_need_gb * 1e9 / (1 << 20)))
                       : static_cast<int64_t>(ctx.plan.instance.ram_gib) * 1024 * 9 / 10},
        {"shm_size", 16 * ctx.plan.instance.gpu_count},
        {"rpc", {{"keepalive", 600000}}}}},
      {"cloud",
       {{"networking",
         {{"vpc_id", "${EAS_VPC_ID}"},
          {"vswitch_id", "${EAS_VSWITCH_ID}"},
          {"security_group_id", "${EAS_SECURITY_GROUP_ID}"}}}}},
      {"features", {{"eas.aliyun.com/gpu-driver-version", "${EAS_GPU_DRIVER_VERSION}"}}},
      {"containers", Doc::array({container})},
      {"storage",
       Doc::array({Doc{{"mount_path", std::string(kModelMount) + "/" + ctx.model.served_name + "/"},
                       {"oss", {{"path", OssPath(ctx)}, {"readOnly", true}}}}})},
      {"autoscaler", PaiEasAutoscaler(ctx)}};
  // metadata.instance counts units; unit.size the instances of each (docs/deploy.md: sources, and which
  // of these fields the public pages left uncertain).
  if (unit_size > 1) service["unit"] = {{"size", unit_size}};
  const std::string deploy =
      "#!/usr/bin/env bash\n# PAI-EAS service for " + ctx.model.served_name + " on " + ctx.plan.instance.id +
      " (rendered by k3 render): fills service.json from the environment and creates the service.\n"
      "set -euo pipefail\ncd \"$(dirname \"$0\")\"\n"
      ": \"${EAS_RESOURCE_ID:?set EAS_RESOURCE_ID to the EAS dedicated resource group (quota) id}\"\n"
      ": \"${EAS_VPC_ID:?set EAS_VPC_ID}\"\n: \"${EAS_VSWITCH_ID:?set EAS_VSWITCH_ID}\"\n"
      ": \"${EAS_SECURITY_GROUP_ID:?set EAS_SECURITY_GROUP_ID}\"\n"
      ": \"${EAS_GPU_DRIVER_VERSION:?set EAS_GPU_DRIVER_VERSION to a driver EAS offers for the GPUs}\"\n"
      "export EAS_RESOURCE_ID EAS_VPC_ID EAS_VSWITCH_ID EAS_SECURITY_GROUP_ID EAS_GPU_DRIVER_VERSION\n"
      "# shellcheck disable=SC2016 # the list names the variables envsubst may replace\n"
      "envsubst '${EAS_RESOURCE_ID} ${EAS_VPC_ID} ${EAS_VSWITCH_ID} ${EAS_SECURITY_GROUP_ID} "
      "${EAS_GPU_DRIVER_VERSION}' <service.json >service.filled.json\n"
      "eascmd create service.filled.json\n";
  std::vector<RenderedFile> files = {{"service.json", service.dump(2) + "\n"}, {"deploy-eas.sh", deploy}};
  files.push_back(
      CleanupScript(ctx, "run \"EAS service " + service_name + "\" eascmd delete " + service_name + "\n",
                    {"the EAS dedicated resource group (quota) until released per contract",
                     "the weights in " + ctx.weights.uri + " (OSS storage)"}));
  std::vector<std::string> apply = {"bash deploy-eas.sh"};
  if (unit_size > 1) {
    apply.push_back(fmt::format(
        "# a distributed service: each of its {} unit(s) is {} instances of {} (RANK_ID 0..{}); EAS sends "
        "the "
        "traffic to instance 0 of each unit, and EAS_RESOURCE_ID must be a Lingjun resource quota",
        ctx.plan.replicas, unit_size, ctx.plan.instance.id, unit_size - 1));
  }
  if (!ctx.options.autoscale.enabled) {
    apply.push_back("# autoscaler min stays >= 1: scale-to-zero reloads the weights on every cold start");
  }
  files.push_back(RenderNotes(ctx, apply));
  return files;
}

Result<std::vector<RenderedFile>> RenderAck(const RenderContext& ctx) {
  if (!ValidRegion(ctx.options.region)) {
    return InvalidArgument(
        "--target alibaba-ack: the OSS volume reads the bucket through its region's internal endpoint "
        "(oss-REGION-internal.aliyuncs.com): pass --region (e.g. cn-hangzhou)");
  }
  const std::string pvc_name = ctx.app_name + "-pvc";
  // OSS static volume through the ACK OSS CSI driver, mounted read-only by every serving pod.
  Doc pv_meta = ObjectMeta(ctx, ctx.app_name + "-pv", "weights");
  pv_meta.erase("namespace");  // a PersistentVolume is cluster-scoped
  Doc pv = {{"apiVersion", "v1"},
            {"kind", "PersistentVolume"},
            {"metadata", pv_meta},
            {"spec",
             {{"capacity", {{"storage", std::to_string(ctx.model.weight_bytes / 1000000000 * 5 / 4) + "G"}}},
              {"accessModes", Doc::array({"ReadOnlyMany"})},
              {"persistentVolumeReclaimPolicy", "Retain"},
              {"csi",
               {{"driver", "ossplugin.csi.alibabacloud.com"},
                {"volumeHandle", ctx.app_name + "-pv"},
                {"nodePublishSecretRef", {{"name", OssSecretName(ctx)}, {"namespace", Namespace(ctx)}}},
                {"volumeAttributes",
                 {{"bucket", ctx.weights.bucket},
                  {"path", "/" + ctx.weights.path},
                  {"url", "oss-" + ctx.options.region + "-internal.aliyuncs.com"}}}}}}}};
  Doc pvc = {{"apiVersion", "v1"},
             {"kind", "PersistentVolumeClaim"},
             {"metadata", ObjectMeta(ctx, pvc_name, "weights")},
             {"spec",
              {{"accessModes", Doc::array({"ReadOnlyMany"})},
               {"volumeName", ctx.app_name + "-pv"},
               {"storageClassName", ""},
               {"resources", {{"requests", {{"storage", pv["spec"]["capacity"]["storage"]}}}}}}}};
  const int gpus = ctx.plan.instance.gpu_count;
  Doc env = EngineEnvList(ctx, false);  // the one-node InferenceService (groups: AckLeaderWorkerSet)
  Doc mounts = Doc::array(
      {Doc{{"name", "model-cache"}, {"mountPath", std::string(kModelMount) + "/" + ctx.model.served_name}},
       Doc{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
  Doc container = {{"name", "kserve-container"},
                   {"image", ctx.image},
                   {"command", Doc::array({"/bin/bash", "-c"})},
                   {"args", Doc::array({ServeShell(ctx) + "\n"})},
                   {"env", env},
                   {"ports", Doc::array({Doc{{"containerPort", ctx.serve.port}, {"protocol", "TCP"}}})},
                   {"resources", ServingResources(ctx)},
                   {"startupProbe", StartupProbe(ctx)},
                   {"readinessProbe", ReadinessProbe(ctx)},
                   {"volumeMounts", mounts}};
  Doc volumes = Doc::array(
      {Doc{{"name", "model-cache"}, {"persistentVolumeClaim", {{"claimName", pvc_name}}}}, ShmVolume(gpus)});
  Doc predictor = {{"containers", Doc::array({container})}, {"volumes", volumes}};
  if (ctx.plan.cpu_only) {
    predictor["nodeSelector"] = {{"node.kubernetes.io/instance-type", ctx.plan.instance.id}};
  }
  Doc meta = ObjectMeta(ctx, ctx.app_name, "serving");
  meta["annotations"] = {{"serving.kserve.io/deploymentMode", "RawDeployment"}};
  Doc isvc = {{"apiVersion", "serving.kserve.io/v1beta1"},
              {"kind", "InferenceService"},
              {"metadata", meta},
              {"spec", {{"predictor", predictor}}}};
  std::string arena =
      "#!/usr/bin/env bash\n# Arena alternative to inferenceservice.yaml (guide §6.3); needs Arena "
      "0.9.15+ and the PVC from weights.yaml.\nset -euo pipefail\n";
  arena += fmt::format(
      "arena serve custom \\\n  --name={} \\\n  --version=v1 \\\n  --gpus={} \\\n  --replicas={} \\\n"
      "  --restful-port={} \\\n  --image={} \\\n  --data={}:{}/{} \\\n  \"{}\"\n",
      ctx.app_name, gpus, ctx.plan.replicas, ctx.serve.port, ctx.image, pvc_name, kModelMount,
      ctx.model.served_name, OneLine(ServeShell(ctx)));
  // A group of several nodes is a LeaderWorkerSet over the same OSS volume (render_multinode.h): KServe
  // would need a ServingRuntime with a worker spec, and its workers carry no node rank.
  const bool group = ctx.plan.layout.nodes > 1;
  const AckGroupFiles lws =
      group ? AckLeaderWorkerSet(ctx, pvc_name, std::string(kModelMount) + "/" + ctx.model.served_name)
            : AckGroupFiles{};
  std::vector<RenderedFile> files = {
      {"weights.yaml", YamlFile({"OSS-backed weights volume (ACK OSS CSI driver); fill the bucket first: "
                                 "k3 weights sync hf://" +
                                 ctx.model.hf_id + " " + ctx.weights.uri},
                                {pv, pvc})}};
  if (group) {
    files.insert(files.end(), lws.files.begin(), lws.files.end());
  } else {
    files.push_back({"inferenceservice.yaml",
                     YamlFile({"KServe InferenceService (ack-kserve), RawDeployment mode",
                               fmt::format("{} x {}: TP={} PP={}", ctx.plan.layout.nodes,
                                           ctx.plan.instance.id, ctx.plan.layout.tp, ctx.plan.layout.pp)},
                              {isvc})});
  }
  // arena's --gpus / --cpu flags size a GPU pod: CPU plans use inferenceservice.yaml.
  if (!ctx.plan.cpu_only && !group) files.push_back({"arena.sh", arena});
  std::string cleanup =
      (group ? lws.cleanup
             : "run \"inferenceservice.yaml objects\" kubectl delete -f inferenceservice.yaml "
               "--ignore-not-found\n") +
      "run \"weights.yaml objects (PV, PVC; the bucket keeps the weights)\" kubectl delete -f weights.yaml "
      "--ignore-not-found\n"
      "run \"Secret " +
      OssSecretName(ctx) + "\" kubectl delete secret " + OssSecretName(ctx) + " --namespace " +
      Namespace(ctx) + " --ignore-not-found\n";
  if (!ctx.options.name_space.empty()) {
    cleanup += "run \"namespace " + ctx.options.name_space +
               "\" kubectl delete -f namespace.yaml --ignore-not-found\n";
  }
  files.push_back(CleanupScript(ctx, cleanup,
                                {"the ACK node pool and cluster (delete the node pool first, guide §6.4)",
                                 "the weights in " + ctx.weights.uri + " (OSS storage)"}));
  std::vector<std::string> apply;
  if (group) apply.push_back(kLwsInstall);
  for (RenderedFile& f : NamespaceFile(ctx)) {
    apply.push_back("kubectl apply -f " + f.path);
    files.push_back(std::move(f));
  }
  apply.push_back(
      "kubectl create secret generic " + OssSecretName(ctx) + " --namespace " + Namespace(ctx) +
      " --from-literal=akId=\"$OSS_ACCESS_KEY_ID\" --from-literal=akSecret=\"$OSS_ACCESS_KEY_SECRET\"");
  apply.push_back("kubectl apply -f weights.yaml");
  if (group) {
    apply.insert(apply.end(), lws.apply.begin(), lws.apply.end());
  } else {
    apply.push_back("kubectl apply -f inferenceservice.yaml");
    apply.push_back("kubectl get inferenceservice" + KubectlNamespace(ctx) + " " + ctx.app_name + " -w");
  }
  files.push_back(RenderNotes(ctx, apply));
  return files;
}

}  // namespace k3::deploy
