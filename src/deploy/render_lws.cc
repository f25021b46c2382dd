// Targets azure-aks, gcp-gke and k8s: the serving workload (LeaderWorkerSet for multi-node layouts),
// weights PVC + pre-sync Job, cluster scripts, and with --gateway the GKE Inference Gateway objects.
#include <algorithm>

#include "src/deploy/render_gateway.h"
#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_scripts.h"
#include "src/deploy/render_workload.h"

namespace k3::deploy {
namespace {

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
  const std::string each = ctx.plan.cpu_only
                               ? fmt::format("CPU-only, {} rank(s) each", ctx.plan.cpu.ranks_per_node)
                               : fmt::format("{} GPUs each", ctx.plan.instance.gpu_count);
  std::vector<std::string> header = {
      fmt::format("{} on {}: {} x {} ({}), TP={} PP={}, engine {}", ctx.model.served_name, ctx.plan.target.id,
                  ctx.plan.layout.nodes, ctx.plan.instance.id, each, ctx.plan.layout.tp, ctx.plan.layout.pp,
                  EngineName(ctx.options.engine)),
      fmt::format("startupProbe budget {} s = 2 x planned load {:.0f} s + 600 s (k3 plan)",
                  ctx.plan.probes.startup_budget_seconds, ctx.plan.probes.load_seconds)};
  if (multi) header.push_back("needs the LeaderWorkerSet controller (kubernetes-sigs/lws) in the cluster");
  if (ctx.plan.instance.cpu_arch == "arm64") {
    header.push_back("arm64 nodes: check `docker manifest inspect " + ctx.image + "` lists linux/arm64");
  }
  files.push_back({manifest, YamlFile(header, ServingWorkload(ctx, overlay))});
  if (!ctx.stream_weights) {
    files.push_back(
        {"weights.yaml", YamlFile({"Weights cache volume and the Job that fills it from " + ctx.weights.uri,
                                   "apply and wait for the Job before the serving workload"},
                                  {WeightsPvc(ctx, overlay.storage_class), PresyncJob(ctx)})});
  } else if (ctx.presync_job()) {
    files.push_back({"weights.yaml", YamlFile({"The Job that fills " + ctx.weights.uri + " from hf://" +
                                                   ctx.model.hf_id + " (the server streams from the bucket)",
                                               "apply and wait for the Job before the serving workload"},
                                              {PresyncJob(ctx)})});
  }
  if (ctx.options.gateway) {
    files.push_back({"gateway.yaml", YamlFile({"Inference Gateway: endpoint picker (" + ctx.app_name +
                                                   "-epp), InferencePool over the serving "
                                                   "pods, InferenceObjective, Gateway and HTTPRoute",
                                               std::string("GAIE ") + kGaieVersion +
                                                   " objects; the CRDs and the gateway implementation are "
                                                   "installed first (setup-cluster.sh or NOTES.md)"},
                                              GatewayObjects(ctx))});
  }
  for (RenderedFile& f : ClusterScripts(ctx, manifest)) files.push_back(std::move(f));
  for (RenderedFile& f : NamespaceFile(ctx)) files.push_back(std::move(f));
  std::vector<std::string> apply;
  if (std::any_of(files.begin(), files.end(),
                  [](const RenderedFile& f) { return f.path == "setup-cluster.sh"; })) {
    apply.push_back("bash setup-cluster.sh");
  }
  if (ctx.options.gateway && ctx.plan.target.id == "k8s") {
    for (const std::string& c : GatewayInstallCommands(ctx)) apply.push_back(c);
  }
  if (multi) {
    apply.push_back(
        "kubectl apply --server-side -f https://github.com/kubernetes-sigs/lws/releases/download/v0.10.0/"
        "manifests.yaml");  // the release whose CRD ../shared/schemas validates against
  }
  if (!ctx.options.name_space.empty()) apply.push_back("kubectl apply -f namespace.yaml");
  const std::string ns = KubectlNamespace(ctx);
  if (!BucketCredentialsEnvFrom(ctx).empty()) {
    // A generic cluster has no cloud identity: the pods read the bucket's keys from this Secret.
    apply.push_back("kubectl create secret generic " + BucketCredentialsSecret(ctx) + ns +
                    " --from-literal=AWS_ACCESS_KEY_ID=\"$AWS_ACCESS_KEY_ID\" "
                    "--from-literal=AWS_SECRET_ACCESS_KEY=\"$AWS_SECRET_ACCESS_KEY\"");
  }
  if (ctx.presync_job()) {
    apply.push_back("kubectl apply -f weights.yaml && kubectl wait" + ns +
                    " --for=condition=complete --timeout=24h job/" + ctx.app_name + "-weights-presync");
  }
  apply.push_back("kubectl apply -f " + manifest);
  if (ctx.options.gateway) apply.push_back("kubectl apply -f gateway.yaml");
  apply.push_back("kubectl get svc" + ns + " " + ctx.app_name + "-svc -w");
  files.push_back(RenderNotes(ctx, apply));
  return files;
}

Result<std::vector<RenderedFile>> RenderEks(const RenderContext& ctx) { return RenderLwsTarget(ctx); }

}  // namespace k3::deploy
