// Targets azure-aks, gcp-gke and k8s: the serving workload (LeaderWorkerSet for multi-node layouts),
// weights PVC + pre-sync Job, cluster scripts, and with --gateway the GKE Inference Gateway objects.
#include <algorithm>

#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_scripts.h"
#include "src/deploy/render_workload.h"

namespace k3::deploy {
namespace {

// InferencePool (GAIE v1) over the leader pods, and an HTTPRoute from the gateway to it.
std::vector<Doc> GatewayObjects(const RenderContext& ctx) {
  Doc match = {{"leaderworkerset.sigs.k8s.io/name", WorkloadName(ctx)}, {"role", "leader"}};
  if (ctx.plan.layout.nodes == 1) {
    match = {{"app.kubernetes.io/name", ctx.app_name}, {"app.kubernetes.io/component", "serving"}};
  }
  Doc pool = {{"apiVersion", "inference.networking.k8s.io/v1"},
              {"kind", "InferencePool"},
              {"metadata", ObjectMeta(ctx, ctx.app_name, "gateway")},
              {"spec",
               {{"selector", {{"matchLabels", match}}},
                {"targetPorts", Doc::array({Doc{{"number", ctx.serve.port}}})},
                {"endpointPickerRef", {{"name", ctx.app_name + "-epp"}, {"port", {{"number", 9002}}}}}}}};
  Doc gateway = {{"apiVersion", "gateway.networking.k8s.io/v1"},
                 {"kind", "Gateway"},
                 {"metadata", ObjectMeta(ctx, ctx.app_name + "-gateway", "gateway")},
                 {"spec",
                  {{"gatewayClassName", "gke-l7-regional-external-managed"},
                   {"listeners", Doc::array({Doc{{"name", "http"}, {"protocol", "HTTP"}, {"port", 80}}})}}}};
  Doc route = {
      {"apiVersion", "gateway.networking.k8s.io/v1"},
      {"kind", "HTTPRoute"},
      {"metadata", ObjectMeta(ctx, ctx.app_name + "-route", "gateway")},
      {"spec",
       {{"parentRefs", Doc::array({Doc{{"name", ctx.app_name + "-gateway"}}})},
        {"rules",
         Doc::array({Doc{{"matches", Doc::array({Doc{{"path", {{"type", "PathPrefix"}, {"value", "/"}}}}})},
                         {"backendRefs", Doc::array({Doc{{"group", "inference.networking.k8s.io"},
                                                         {"kind", "InferencePool"},
                                                         {"name", ctx.app_name}}})}}})}}}};
  return {pool, gateway, route};
}

std::string ManifestFileName(const RenderContext& ctx) {
  const std::string& t = ctx.plan.target.id;
  if (t == "azure-aks") return ctx.app_name + "-azure.yaml";
  if (t == "gcp-gke") return ctx.app_name + "-gcp.yaml";
  if (t == "aws-eks") return ctx.app_name + "-eks.yaml";
  return ctx.app_name + ".yaml";
}

}  // namespace

Result<std::vector<RenderedFile>> RenderLwsTarget(const RenderContext& ctx) {
  const CloudOverlay overlay = OverlayFor(ctx);
  std::vector<RenderedFile> files;
  const std::string manifest = ManifestFileName(ctx);
  const bool multi = ctx.plan.layout.nodes > 1;
  std::vector<std::string> header = {
      fmt::format("{} on {}: {} x {} ({} GPUs each), TP={} PP={}, engine {}", ctx.model.served_name,
                  ctx.plan.target.id, ctx.plan.layout.nodes, ctx.plan.instance.id,
                  ctx.plan.instance.gpu_count, ctx.plan.layout.tp, ctx.plan.layout.pp,
                  EngineName(ctx.options.engine)),
      fmt::format("startupProbe budget {} s = 2 x planned load {:.0f} s + 600 s (k3 plan)",
                  ctx.plan.probes.startup_budget_seconds, ctx.plan.probes.load_seconds)};
  if (multi) header.push_back("needs the LeaderWorkerSet controller (kubernetes-sigs/lws) in the cluster");
  if (ctx.plan.instance.cpu_arch == "arm64") {
    header.push_back("arm64 nodes: check `docker manifest inspect " + ctx.image + "` lists linux/arm64");
  }
  files.push_back({manifest, YamlFile(header, ServingWorkload(ctx, overlay))});
  files.push_back(
      {"weights.yaml", YamlFile({"Weights cache volume and the Job that fills it from " + ctx.weights.uri,
                                 "apply and wait for the Job before the serving workload"},
                                {WeightsPvc(ctx, overlay.storage_class), PresyncJob(ctx)})});
  if (ctx.options.gateway) {
    files.push_back(
        {"gateway.yaml", YamlFile({"Inference Gateway: InferencePool over the serving pods + HTTPRoute",
                                   "the endpoint picker (" + ctx.app_name +
                                       "-epp) comes from the GAIE inferencepool Helm chart"},
                                  GatewayObjects(ctx))});
  }
  for (RenderedFile& f : ClusterScripts(ctx, manifest)) files.push_back(std::move(f));
  std::vector<std::string> apply;
  if (std::any_of(files.begin(), files.end(),
                  [](const RenderedFile& f) { return f.path == "setup-cluster.sh"; })) {
    apply.push_back("bash setup-cluster.sh");
  }
  if (multi) {
    apply.push_back(
        "kubectl apply --server-side -f https://github.com/kubernetes-sigs/lws/releases/latest/download/"
        "manifests.yaml");
  }
  apply.push_back(
      "kubectl apply -f weights.yaml && kubectl wait --for=condition=complete --timeout=24h job/" +
      ctx.app_name + "-weights-presync");
  apply.push_back("kubectl apply -f " + manifest);
  if (ctx.options.gateway) apply.push_back("kubectl apply -f gateway.yaml");
  apply.push_back("kubectl get svc " + ctx.app_name + "-svc -w");
  files.push_back(RenderNotes(ctx, apply));
  return files;
}

Result<std::vector<RenderedFile>> RenderEks(const RenderContext& ctx) { return RenderLwsTarget(ctx); }

}  // namespace k3::deploy
