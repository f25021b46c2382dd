// Alibaba targets: alibaba-pai-eas (EAS service JSON with an OSS mount and autoscaler; field notes in
// spec/pai-eas-service-json.md) and alibaba-ack (arena command + KServe InferenceService in
// RawDeployment mode over an OSS-backed PVC).
#include "src/deploy/render_k8s_common.h"

namespace k3::deploy {
namespace {

constexpr const char* kModelMount = "/mnt/models";

std::string OssPath(const RenderContext& ctx) {
  if (ctx.weights.scheme == "oss") return "oss://" + ctx.weights.bucket + "/" + ctx.weights.path + "/";
  return "oss://<BUCKET>/" + ctx.model.served_name + "/";
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
  Doc service = {
      {"metadata",
       {{"name", service_name},
        {"instance", ctx.plan.replicas},
        {"shm_size", 16 * ctx.plan.instance.gpu_count},
        {"rpc", {{"keepalive", 600000}}}}},
      {"cloud", {{"computing", {{"instance_type", ctx.plan.instance.id}}}}},
      {"containers", Doc::array({container})},
      {"storage",
       Doc::array({Doc{{"mount_path", std::string(kModelMount) + "/" + ctx.model.served_name + "/"},
                       {"oss", {{"path", OssPath(ctx)}, {"readOnly", true}}}}})},
      {"autoscaler",
       {{"min", ctx.plan.replicas},
        {"max", ctx.plan.replicas + 1},
        {"scaleStrategies", Doc::array({Doc{{"metricName", "qps"}, {"threshold", 2}}})}}}};
  std::vector<RenderedFile> files = {{"service.json", service.dump(2) + "\n"}};
  std::vector<std::string> apply = {"eascmd create service.json"};
  if (ctx.plan.layout.nodes > 1) {
    apply.insert(apply.begin(),
                 fmt::format("# {} nodes per group: select Lingjun resources and {} nodes in the EAS "
                             "console's distributed deployment (the JSON fields for multi-node are "
                             "not in the published field notes)",
                             ctx.plan.layout.nodes, ctx.plan.layout.nodes));
  }
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
  Doc env = EngineEnvList(ctx, ctx.plan.layout.nodes > 1);
  Doc mounts = Doc::array(
      {Doc{{"name", "model-cache"}, {"mountPath", std::string(kModelMount) + "/" + ctx.model.served_name}},
       Doc{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
  Doc container = {{"name", "kserve-container"},
                   {"image", ctx.image},
                   {"command", Doc::array({"/bin/bash", "-c"})},
                   {"args", Doc::array({ServeShell(ctx) + "\n"})},
                   {"env", env},
                   {"ports", Doc::array({Doc{{"containerPort", ctx.serve.port}, {"protocol", "TCP"}}})},
                   {"resources", GpuResources(gpus)},
                   {"startupProbe", StartupProbe(ctx)},
                   {"readinessProbe", ReadinessProbe(ctx)},
                   {"volumeMounts", mounts}};
  Doc volumes = Doc::array(
      {Doc{{"name", "model-cache"}, {"persistentVolumeClaim", {{"claimName", pvc_name}}}}, ShmVolume(gpus)});
  Doc predictor = {{"containers", Doc::array({container})}, {"volumes", volumes}};
  if (ctx.plan.layout.nodes > 1) {
    Doc worker = {{"name", "worker-container"},
                  {"image", ctx.image},
                  {"env", env},
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
      {"arena.sh", arena}};
  files.push_back(RenderNotes(ctx, {"kubectl apply -f weights.yaml", "kubectl apply -f inferenceservice.yaml",
                                    "kubectl get inferenceservice " + ctx.app_name + " -w"}));
  return files;
}

}  // namespace k3::deploy
