// Alibaba targets: alibaba-pai-eas (EAS service JSON with an OSS mount and autoscaler; field notes in
// spec/pai-eas-service-json.md) and alibaba-ack (arena command + KServe InferenceService in
// RawDeployment mode over an OSS-backed PVC).
#include "src/deploy/render_k8s_common.h"

namespace k3::deploy {
namespace {

constexpr const char* kModelMount = "/mnt/models";
constexpr const char* kRayHead = "ray start --head --port=6379 --disable-usage-stats;\n";

std::string OssPath(const RenderContext& ctx) {
  if (ctx.weights.scheme == "oss") return "oss://" + ctx.weights.bucket + "/" + ctx.weights.path + "/";
  return "oss://<BUCKET>/" + ctx.model.served_name + "/";
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
  Doc container = {{"image", ctx.image}, {"port", ctx.serve.port},   {"script", OneLine(ServeShell(ctx))},
                   {"env", env},         {"startup_check", startup}, {"health_check", health}};
  // Dedicated resource group (quota) instead of public instances; VPC and GPU driver filled by
  // deploy-eas.sh from the environment (spec pai-eas-service-json.md: metadata.resource, cloud.networking,
  // features).
  Doc service = {
      {"metadata",
       {{"name", service_name},
        {"instance", ctx.plan.replicas},
        {"resource", "${EAS_RESOURCE_ID}"},
        {"gpu", ctx.plan.instance.gpu_count},
        {"cpu", ctx.plan.instance.vcpu},
        {"memory", static_cast<int64_t>(ctx.plan.instance.ram_gib) * 1024 * 9 / 10},
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
      {"autoscaler",
       {{"min", ctx.plan.replicas},
        {"max", ctx.plan.replicas + 1},
        {"scaleStrategies", Doc::array({Doc{{"metricName", "qps"}, {"threshold", 2}}})}}}};
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
  std::vector<std::string> apply = {"bash deploy-eas.sh"};
  apply.push_back("# autoscaler min stays >= 1: scale-to-zero reloads the weights on every cold start");
  files.push_back(RenderNotes(ctx, apply));
  return files;
}

Result<std::vector<RenderedFile>> RenderAck(const RenderContext& ctx) {
  const std::string pvc_name = ctx.app_name + "-pvc";
  // OSS static volume through the ACK OSS CSI driver, mounted read-only by every serving pod.
  Doc pv = {{"apiVersion", "v1"},
            {"kind", "PersistentVolume"},
            {"metadata", ObjectMeta(ctx, ctx.app_name + "-pv", "weights")},
            {"spec",
             {{"capacity", {{"storage", std::to_string(ctx.model.weight_bytes / 1000000000 * 5 / 4) + "G"}}},
              {"accessModes", Doc::array({"ReadOnlyMany"})},
              {"persistentVolumeReclaimPolicy", "Retain"},
              {"csi",
               {{"driver", "ossplugin.csi.alibabacloud.com"},
                {"volumeHandle", ctx.app_name + "-pv"},
                {"nodePublishSecretRef", {{"name", OssSecretName(ctx)}, {"namespace", Namespace(ctx)}}},
                {"volumeAttributes",
                 {{"bucket", ctx.weights.scheme == "oss" ? ctx.weights.bucket : "<BUCKET>"},
                  {"path", "/" + (ctx.weights.scheme == "oss" ? ctx.weights.path : ctx.model.served_name)},
                  {"url", "oss-<REGION>-internal.aliyuncs.com"}}}}}}}};
  Doc pvc = {{"apiVersion", "v1"},
             {"kind", "PersistentVolumeClaim"},
             {"metadata", ObjectMeta(ctx, pvc_name, "weights")},
             {"spec",
              {{"accessModes", Doc::array({"ReadOnlyMany"})},
               {"volumeName", ctx.app_name + "-pv"},
               {"storageClassName", ""},
               {"resources", {{"requests", {{"storage", pv["spec"]["capacity"]["storage"]}}}}}}}};
  const int gpus = ctx.plan.instance.gpu_count;
  const bool multi = ctx.plan.layout.nodes > 1;
  Doc env = EngineEnvList(ctx, multi);
  Doc mounts = Doc::array(
      {Doc{{"name", "model-cache"}, {"mountPath", std::string(kModelMount) + "/" + ctx.model.served_name}},
       Doc{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
  Doc container = {
      {"name", "kserve-container"},
      {"image", ctx.image},
      {"command", Doc::array({"/bin/bash", "-c"})},
      {"args", Doc::array({(multi ? std::string(kRayHead) : std::string()) + ServeShell(ctx) + "\n"})},
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
  if (ctx.plan.layout.nodes > 1) {
    // KServe injects HEAD_SVC (the head pod's Service) into multi-node predictors; the worker joins the
    // head's Ray cluster and blocks.
    Doc worker_env = env;
    worker_env.push_back(
        Doc{{"name", "POD_NAMESPACE"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}}});
    Doc worker = {
        {"name", "worker-container"},
        {"image", ctx.image},
        {"command", Doc::array({"/bin/bash", "-c"})},
        {"args", Doc::array({"ray start --address=\"${HEAD_SVC}.${POD_NAMESPACE}.svc.cluster.local:6379\" "
                             "--block\n"})},
        {"env", worker_env},
        {"resources", GpuResources(gpus)},
        {"volumeMounts", mounts}};
    predictor["workerSpec"] = {{"tensorParallelSize", ctx.plan.layout.tp},
                               {"pipelineParallelSize", ctx.plan.layout.pp},
                               {"containers", Doc::array({worker})}};
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
  std::vector<RenderedFile> files = {
      {"weights.yaml", YamlFile({"OSS-backed weights volume (ACK OSS CSI driver); upload the weights first: "
                                 "ossutil cp -r <LOCAL_DIR> " +
                                 OssPath(ctx)},
                                {pv, pvc})},
      {"inferenceservice.yaml",
       YamlFile({"KServe InferenceService (ack-kserve), RawDeployment mode",
                 fmt::format("{} x {}: TP={} PP={}", ctx.plan.layout.nodes, ctx.plan.instance.id,
                             ctx.plan.layout.tp, ctx.plan.layout.pp)},
                {isvc})},
  };
  // arena serve custom runs one pod: only for groups that fit one node.
  // arena's --gpus / --cpu flags size a GPU pod: CPU plans use inferenceservice.yaml.
  if (!multi && !ctx.plan.cpu_only) files.push_back({"arena.sh", arena});
  files.push_back(RenderNotes(
      ctx,
      {"kubectl create secret generic " + OssSecretName(ctx) + " --namespace " + Namespace(ctx) +
           " --from-literal=akId=\"$OSS_ACCESS_KEY_ID\" --from-literal=akSecret=\"$OSS_ACCESS_KEY_SECRET\"",
       "kubectl apply -f weights.yaml", "kubectl apply -f inferenceservice.yaml",
       "kubectl get inferenceservice " + ctx.app_name + " -w"}));
  return files;
}

}  // namespace k3::deploy
