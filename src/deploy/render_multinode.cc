// Multi-node groups on PAI-EAS (a distributed unit) and ACK (a LeaderWorkerSet over the OSS volume); see
// render_multinode.h.
#include "src/deploy/render_multinode.h"

#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_workload.h"

namespace k3::deploy {
namespace {

std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Points every pod of the group at the OSS claim, mounted where the engine reads (`model_dir`), and drops
// the fsGroup of a writable volume: the OSS mount is read-only and the CSI driver sets its owner.
void MountOssWeights(Doc& pod, const std::string& pvc, const std::string& model_dir) {
  pod.erase("securityContext");
  for (Doc& v : pod["volumes"]) {
    if (v["name"] == "model-cache") v["persistentVolumeClaim"] = {{"claimName", pvc}, {"readOnly", true}};
  }
  for (Doc& c : pod["containers"]) {
    for (Doc& m : c["volumeMounts"]) {
      if (m["name"] == "model-cache") {
        m["mountPath"] = model_dir;
        m["readOnly"] = true;
      }
    }
  }
}

}  // namespace

std::string EasUnitScript(const RenderContext& ctx, const std::string& model_dir) {
  const int nodes = ctx.plan.layout.nodes;
  ServeSpec serve = ctx.serve;
  serve.model_ref = model_dir;
  std::vector<std::string> argv;
  std::string ifname_exports;
  if (ctx.options.engine == Engine::kVllm) {
    argv = {"vllm", "serve", serve.model_ref};
    for (std::string& f : VllmFlags(serve)) argv.push_back(std::move(f));
    argv.insert(argv.end(), {"--port", std::to_string(serve.port)});
    // NCCL and vLLM's Gloo groups use the interface EAS reserves for traffic between the instances.
    ifname_exports = "NCCL_SOCKET_IFNAME=\"$COMM_IFNAME\" GLOO_SOCKET_IFNAME=\"$COMM_IFNAME\"";
  } else {
    argv = K3ServeArgv(serve);
    argv.insert(argv.begin(), "k3");
    ifname_exports = "GLOO_SOCKET_IFNAME=\"$COMM_IFNAME\"";  // k3's rank traffic (docs/distributed.md)
  }
  // Instance RANK_ID of the unit; node 0 (the instance EAS sends traffic to) serves HTTP, the others run
  // the ranks only. The same flags for both engines (vLLM docs/serving/parallelism_scaling.md, k3 serve).
  argv.insert(argv.end(), {"--nnodes", std::to_string(nodes), "--node-rank", "\"$RANK_ID\"", "--master-addr",
                           "\"$MASTER_ADDRESS\"", "\"$@\""});
  const std::vector<std::string> body = {
      "set -eu",
      ": \"${RANK_ID:?EAS sets RANK_ID on each instance of a distributed unit (unit.size)}\"",
      ": \"${MASTER_ADDRESS:?EAS sets MASTER_ADDRESS to instance 0 of the unit}\"",
      "if [ -n \"${COMM_IFNAME:-}\" ]; then export " + ifname_exports + "; fi",
      "set --",
      "if [ \"$RANK_ID\" != 0 ]; then set -- --headless; fi",
      "exec " + JoinWords(argv)};
  std::string script;
  for (const std::string& line : body) script += (script.empty() ? "" : "; ") + line;
  return "bash -c '" + script + "'";
}

AckGroupFiles AckLeaderWorkerSet(const RenderContext& ctx, const std::string& pvc,
                                 const std::string& model_dir) {
  CloudOverlay overlay = OverlayFor(ctx);
  // ACK nodes carry the well-known instance-type label; GPU feature discovery's labels are not installed.
  overlay.node_selector = {{"node.kubernetes.io/instance-type", ctx.plan.instance.id}};
  std::vector<Doc> docs = ServingWorkload(ctx, overlay);
  Doc& template_ = docs.front()["spec"]["leaderWorkerTemplate"];
  MountOssWeights(template_["leaderTemplate"]["spec"], pvc, model_dir);
  MountOssWeights(template_["workerTemplate"]["spec"], pvc, model_dir);
  const std::string manifest = ctx.app_name + "-ack.yaml";
  const std::string each = ctx.plan.cpu_only
                               ? fmt::format("CPU ranks, {} per node", ctx.plan.cpu.ranks_per_node)
                               : fmt::format("{} GPUs each", ctx.plan.instance.gpu_count);
  AckGroupFiles out;
  out.files.push_back(
      {manifest,
       YamlFile({fmt::format("{} on alibaba-ack: one LeaderWorkerSet group of {} x {} ({}), TP={} "
                             "PP={}, engine {}",
                             ctx.model.served_name, ctx.plan.layout.nodes, ctx.plan.instance.id, each,
                             ctx.plan.layout.tp, ctx.plan.layout.pp, EngineName(ctx.options.engine)),
                 "every pod mounts the OSS volume of weights.yaml read-only at " + model_dir,
                 "needs the LeaderWorkerSet controller (kubernetes-sigs/lws) in the cluster"},
                docs)});
  out.apply = {"kubectl apply -f " + manifest,
               "kubectl get svc" + KubectlNamespace(ctx) + " " + ctx.app_name + "-svc -w"};
  out.cleanup = "run \"" + manifest + " objects (LeaderWorkerSet, Service)\" kubectl delete -f " + manifest +
                " --ignore-not-found\n";
  return out;
}

}  // namespace k3::deploy
