// Render dispatcher: resolves model, plan, weights source and serve command, then calls the target's
// renderer. Also the shared YAML file framing and the per-target NOTES.md.
#include "src/deploy/render.h"

#include <algorithm>
#include <map>

#include "src/deploy/plan_format.h"
#include "src/deploy/render_gateway.h"
#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_ops.h"

namespace k3::deploy {
namespace {

constexpr const char* kVllmImage = "vllm/vllm-openai:kimi-k3";
constexpr const char* kModelRoot = "/mnt/models";

bool ValidBucketPart(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

// The weights schemes each target reads, with the identity that reads them: its own cloud's bucket
// through the pods' cloud identity (render_identity.h), the hub, or on Alibaba the OSS mount. A bucket of
// another cloud has no credentials there, and a scheme the target cannot read would be ignored.
Status CheckWeightsScheme(const RenderContext& ctx) {
  static const std::map<std::string, std::vector<std::string>> kSchemes = {
      {"aws-hyperpod", {"hf", "s3"}}, {"aws-eks", {"hf", "s3"}},    {"azure-aks", {"hf", "az"}},
      {"gcp-gke", {"hf", "gs"}},      {"k8s", {"hf", "s3"}},        {"azure-ml", {"hf"}},
      {"gcp-vertex", {"hf"}},         {"alibaba-pai-eas", {"oss"}}, {"alibaba-ack", {"oss"}}};
  const std::string& t = ctx.plan.target.id;
  auto it = kSchemes.find(t);
  if (it == kSchemes.end()) return OkStatus();
  const std::vector<std::string>& ok = it->second;
  if (std::find(ok.begin(), ok.end(), ctx.weights.scheme) != ok.end()) return OkStatus();
  std::string list;
  for (const std::string& s : ok) list += (list.empty() ? "" : ", ") + s + "://";
  std::string why;
  if (t == "alibaba-pai-eas" || t == "alibaba-ack") {
    why = fmt::format(
        "the service mounts its weights from OSS: copy them there first (`k3 weights sync hf://{} "
        "oss://BUCKET/PREFIX`) and pass --weights oss://BUCKET/PREFIX",
        ctx.model.hf_id);
  } else if (t == "azure-ml" || t == "gcp-vertex") {
    why = "the managed endpoint pulls the hub id at start; a bucket would be ignored";
  } else if (t == "k8s") {
    why =
        "a generic cluster has no cloud identity: s3:// reads the keys of a Secret (NOTES.md); for az:// "
        "or gs:// use --target azure-aks or gcp-gke (workload identity)";
  } else {
    why =
        "a bucket of another cloud has no credentials in this cluster (the pods' identity is the "
        "target cloud's)";
  }
  return InvalidArgument("--weights {}: --target {} reads {} ({})", ctx.weights.uri, t, list, why);
}

// Refuses what the target cannot run as rendered: a managed endpoint is one instance per replica (a
// PAI-EAS service spans several as a distributed unit, an ACK group is a LeaderWorkerSet).
Status CheckServable(const RenderContext& ctx) {
  const TargetPlan& p = ctx.plan;
  const std::string group = fmt::format("{} x {}", p.layout.nodes, p.instance.id);
  const std::string& t = p.target.id;
  if (p.layout.nodes > 1 && (t == "azure-ml" || t == "gcp-vertex")) {
    // Azure ML online deployments run one container per instance (managed and Kubernetes compute alike);
    // Vertex documents multi-host GPU serving (multihostGpuNodeCount) only for Model Garden's Ray image on
    // its listed machine types: docs/deploy.md, "Multi-node where the guide goes".
    return InvalidArgument(
        "--target {}: {} needs {} (TP={} x PP={}) but each replica of {} is one instance of {} GPUs ({}); a "
        "TP of {} would not fit its {} GPUs: use a Kubernetes target (azure-aks, gcp-gke, k8s: a "
        "LeaderWorkerSet group), or a smaller --model / --max-model-len, or an --instance whose GPUs hold "
        "the model",
        t, ctx.model.id, group, p.layout.tp, p.layout.pp, t, p.instance.gpu_count,
        t == "azure-ml" ? "an Azure ML online deployment runs one container per instance and has no "
                          "multi-node group"
                        : "Vertex documents multi-host GPU deployments only for its own vLLM + Ray image "
                          "on the machine types it lists, not for a custom container on " +
                              p.instance.id,
        p.layout.tp * p.layout.pp, p.instance.gpu_count);
  }
  K3_RETURN_IF_ERROR(CheckWeightsScheme(ctx));
  if (p.instance.CpuOnly() &&
      (t == "aws-hyperpod" || t == "azure-ml" || t == "gcp-vertex" || t == "alibaba-pai-eas")) {
    return InvalidArgument(
        "--instance {} is CPU-only, and --target {} serves GPU endpoints: render CPU plans for a Kubernetes "
        "target (aws-eks, azure-aks, gcp-gke, alibaba-ack, k8s)",
        p.instance.id, t);
  }
  if (ctx.options.engine == Engine::kK3) {
    if (t == "azure-ml" || t == "gcp-vertex") {
      return InvalidArgument(
          "--engine k3 needs a model directory, but {} has no weights volume (it pulls from the hub): use "
          "--engine vllm, or a Kubernetes target",
          t);
    }
  }
  return OkStatus();
}

// A namespace name is a DNS-1123 label (RFC 1123): lowercase letters, digits and '-', at most 63
// characters, starting and ending with a letter or digit.
bool Dns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

Status CheckNamespace(const RenderOptions& o) {
  if (o.name_space.empty()) return OkStatus();
  if (o.target == "azure-ml" || o.target == "gcp-vertex" || o.target == "alibaba-pai-eas") {
    return InvalidArgument("--namespace {}: --target {} renders no Kubernetes objects; drop --namespace",
                           o.name_space, o.target);
  }
  if (!Dns1123Label(o.name_space)) {
    return InvalidArgument(
        "--namespace '{}': a Kubernetes namespace is a DNS-1123 label (lowercase letters, digits and '-', "
        "at most 63 characters, starting and ending with a letter or digit), e.g. '{}'",
        o.name_space, "kimi-k3");
  }
  return OkStatus();
}

using Renderer = Result<std::vector<RenderedFile>> (*)(const RenderContext&);

const std::map<std::string, Renderer>& Renderers() {
  static const std::map<std::string, Renderer> kRenderers = {
      {"aws-hyperpod", RenderHyperPod}, {"aws-eks", RenderEks},
      {"azure-aks", RenderLwsTarget},   {"gcp-gke", RenderLwsTarget},
      {"k8s", RenderLwsTarget},         {"azure-ml", RenderAzureMl},
      {"gcp-vertex", RenderVertex},     {"alibaba-pai-eas", RenderPaiEas},
      {"alibaba-ack", RenderAck}};
  return kRenderers;
}

}  // namespace

Result<WeightsSource> ParseWeightsUri(const std::string& uri) {
  const size_t sep = uri.find("://");
  const std::string fix =
      "expected hf://ORG/NAME, s3://BUCKET/PREFIX, az://ACCOUNT/CONTAINER/PREFIX, gs://BUCKET/PREFIX "
      "or oss://BUCKET/PREFIX (the URIs `k3 weights sync` takes)";
  if (sep == std::string::npos) return InvalidArgument("--weights '{}': {}", uri, fix);
  WeightsSource w;
  w.uri = uri;
  w.scheme = uri.substr(0, sep);
  if (w.scheme != "hf" && w.scheme != "s3" && w.scheme != "az" && w.scheme != "gs" && w.scheme != "oss") {
    return InvalidArgument("--weights '{}': unknown scheme '{}'; {}", uri, w.scheme, fix);
  }
  std::string rest = uri.substr(sep + 3);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (w.scheme == "az") {  // az://ACCOUNT/CONTAINER/PREFIX, as src/storage reads it
    const size_t account_end = rest.find('/');
    w.account = rest.substr(0, account_end);
    rest = account_end == std::string::npos ? "" : rest.substr(account_end + 1);
    if (!ValidBucketPart(w.account) || rest.empty()) return InvalidArgument("--weights '{}': {}", uri, fix);
  }
  const size_t slash = rest.find('/');
  w.bucket = rest.substr(0, slash);
  w.path = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!ValidBucketPart(w.bucket) || (w.scheme == "hf" && !ValidBucketPart(w.path))) {
    return InvalidArgument("--weights '{}': {}", uri, fix);
  }
  for (char c : w.path) {
    if (c == '\'' || c == '"' || c == '\\' || c == '$' || c == '`' || c == ' ' || c < 0x20) {
      return InvalidArgument("--weights '{}': the path may not contain quotes, spaces, '$' or '`'", uri);
    }
  }
  return w;
}

std::string YamlFile(const std::vector<std::string>& header, const std::vector<Doc>& docs) {
  std::string out;
  for (const std::string& line : header) out += "# " + line + "\n";
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i > 0 || !header.empty()) out += "---\n";
    out += EmitYaml(docs[i]);
  }
  return out;
}

namespace {

// How a user reaches the served model on each target: the address comes from the platform (Service or
// Gateway status, KServe's URL, the managed endpoint's CLI), never from a placeholder to fill in.
std::vector<std::string> VerifyCommands(const RenderContext& ctx) {
  const std::string& t = ctx.plan.target.id;
  const std::string ns = ctx.options.name_space.empty() ? "" : " -n " + ctx.options.name_space;
  const std::string port = std::to_string(ctx.serve.port);
  const std::string chat = "'{\"model\": \"" + ctx.model.served_name +
                           "\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], "
                           "\"max_tokens\": 16}'";
  const bool ack_group = t == "alibaba-ack" && ctx.plan.layout.nodes > 1;  // a LeaderWorkerSet + Service
  if (t == "aws-eks" || t == "azure-aks" || t == "gcp-gke" || t == "k8s" || ack_group) {
    if (ctx.options.gateway) {
      return {"ENDPOINT=$(kubectl get gateway" + ns + " " + ctx.app_name +
                  "-gateway -o jsonpath='{.status.addresses[0].value}')",
              "curl \"http://$ENDPOINT/v1/models\"   # through the Inference Gateway (port 80)"};
    }
    return {"ENDPOINT=$(kubectl get svc" + ns + " " + ctx.app_name +
                "-svc -o "
                "jsonpath='{.status.loadBalancer.ingress[0].ip}{.status.loadBalancer.ingress[0].hostname}')",
            "curl \"http://$ENDPOINT:" + port + "/v1/models\"",
            "curl \"http://$ENDPOINT:" + port + "/health\""};
  }
  if (t == "alibaba-ack") {
    return {"URL=$(kubectl get inferenceservice" + ns + " " + ctx.app_name + " -o jsonpath='{.status.url}')",
            "curl \"$URL/v1/models\""};
  }
  if (t == "aws-hyperpod") {
    std::string name;
    for (char c : ctx.app_name) {
      if (c != '-') name += c;
    }
    // The operator records the SageMaker endpoint it created (CRD status.endpoints.sagemaker.endpointArn).
    return {"ARN=$(kubectl get inferenceendpointconfig" + ns + " " + name +
                " -o jsonpath='{.status.endpoints.sagemaker.endpointArn}')",
            "aws sagemaker-runtime invoke-endpoint --endpoint-name \"${ARN##*/}\" --content-type "
            "application/json --body " +
                chat + " --cli-binary-format raw-in-base64-out /dev/stdout"};
  }
  if (t == "azure-ml") {
    return {
        "az ml online-endpoint invoke --name " + ctx.app_name +
        " --resource-group \"$RESOURCE_GROUP\" --workspace-name \"$WORKSPACE\" --request-file request.json"};
  }
  if (t == "gcp-vertex") {
    return {
        "ENDPOINT_ID=$(gcloud ai endpoints list --project=\"$PROJECT_ID\" --region=\"$REGION\" "
        "--filter=display_name=" +
            ctx.app_name + " --format='value(name.basename())' | head -n 1)",
        "gcloud ai endpoints raw-predict \"$ENDPOINT_ID\" --project=\"$PROJECT_ID\" --region=\"$REGION\" "
        "--request=" +
            chat};
  }
  std::string service = ctx.app_name;
  for (char& c : service) c = c == '-' ? '_' : c;  // EAS names: letters, digits, underscores
  return {"eascmd desc " + service +
          "   # the service's endpoint and token; then curl -H \"Authorization: $TOKEN\" "
          "\"$ENDPOINT/v1/models\""};
}

}  // namespace

RenderedFile RenderNotes(const RenderContext& ctx, const std::vector<std::string>& apply_commands) {
  const TargetPlan& p = ctx.plan;
  std::string s = fmt::format("# {} on {} ({}) with {}\n\n", ctx.model.served_name, p.target.id,
                              p.target.platform, EngineName(ctx.options.engine));
  if (p.cpu_only) {
    s += fmt::format("- Instances: {} x {} (CPU-only, {}), {} node(s) x {} rank(s), TP={}\n",
                     p.layout.nodes * p.replicas, p.instance.id, p.instance.cpu_arch, p.cpu.nodes,
                     p.cpu.ranks_per_node, p.cpu.tp());
    s += "- Plan (k3 plan --engine k3):\n" + CpuPlanFormula(ctx.model, p.instance, p.cpu, "  - ");
  } else {
    s += fmt::format("- Instances: {} x {} ({} x {} GPUs, {}), layout TP={} PP={}\n",
                     p.layout.nodes * p.replicas, p.instance.id, p.layout.nodes, p.instance.gpu_count,
                     p.instance.cpu_arch, p.layout.tp, p.layout.pp);
    s += fmt::format("- Memory per GPU: {:.1f} GB needed of {:.1f} GB usable\n", p.per_gpu.need_gb,
                     p.per_gpu.usable_gb);
  }
  s += fmt::format("- Cost: {} per hour, {} per month (730 h)\n", FormatCostPerHour(p.cost),
                   FormatCostPerMonth(p.cost));
  for (const Price& price : p.cost.prices) {
    s += fmt::format("  - USD {}/h: {} [{} {}{}]\n", FormatUsd(price.usd_per_hour), price.what, price.source,
                     price.date, price.verified ? "" : ", unverified");
  }
  if (!p.cost.known) s += "  - unknown: " + p.cost.unknown_reason + "\n";
  s += fmt::format("- Weights: {} ({:.0f} GB); load at the planned bandwidth {}; startup budget {}\n",
                   ctx.weights.uri, ctx.model.weight_bytes / 1e9, FormatDuration(p.probes.load_seconds),
                   FormatDuration(p.probes.startup_budget_seconds));
  if (ctx.stream_weights && ctx.options.engine == Engine::kVllm) {
    s += fmt::format(
        "- The engine streams the weights from {} at every start (RunAI Model Streamer, no volume). Fill the "
        "bucket once before applying, from a machine in its region: `k3 weights sync hf://{} {}` (resumable; "
        "writes k3-manifest.json last; `k3 weights verify {}` checks it)\n",
        ctx.serve.model_ref, ctx.model.hf_id, ctx.weights.uri, ctx.weights.uri);
  } else if (ctx.stream_weights) {
    s += fmt::format(
        "- `k3 serve` streams the weights from {} into memory at every start (no volume; /health answers 503 "
        "with the load's progress until then){}. weights.yaml's Job fills the bucket first with `k3 weights "
        "sync hf://{} {}` (skips what is there and identical, resumes, writes k3-manifest.json last); the "
        "pods' cloud identity needs write access for the Job and read access for the server\n",
        ctx.weights.uri,
        ctx.serve.expert_parallel ? "; expert parallel, so each rank reads only its own experts" : "",
        ctx.model.hf_id, ctx.weights.uri);
  }
  if (!ctx.volume_rate_note.empty()) s += "- Weights volume: " + ctx.volume_rate_note + "\n";
  for (const std::string& w : p.warnings) s += "- WARNING: " + w + "\n";
  s += OpsNotes(ctx);
  s += "\n## Capacity and cleanup\n\n";
  for (const std::string& n : p.notes) s += "- " + n + "\n";
  s += "\n## Apply\n\n```sh\n";
  // --autoscale / --monitoring steps go after the target's own, before a closing watch (`... -w`).
  std::vector<std::string> apply = apply_commands;
  const bool watch = !apply.empty() && apply.back().size() > 3 && apply.back().ends_with(" -w");
  const std::vector<std::string> ops = OpsApplyCommands(ctx);
  apply.insert(watch ? apply.end() - 1 : apply.end(), ops.begin(), ops.end());
  for (const std::string& c : apply) s += c + "\n";
  s += "```\n\n## Verify\n\n```sh\nk3 lint .\n";
  for (const std::string& line : VerifyCommands(ctx)) s += line + "\n";
  s += "```\n\n## Cleanup\n\nbash cleanup.sh: deletes what these files and scripts created, continues past "
       "failures "
       "and names what may still bill.\n";
  return {"NOTES.md", s};
}

Result<std::vector<RenderedFile>> Render(const Catalog& catalog, const RenderOptions& options) {
  const Target* target = catalog.FindTarget(options.target);
  if (target == nullptr)
    return InvalidArgument("--target '{}': unknown; one of {}", options.target, catalog.TargetIds());
  auto renderer = Renderers().find(target->id);
  if (renderer == Renderers().end()) return Internal("no renderer for target {}", target->id);
  if (options.replicas < 1) return InvalidArgument("--replicas {}: must be at least 1", options.replicas);
  K3_RETURN_IF_ERROR(CheckNamespace(options));

  RenderContext ctx;
  ctx.options = options;
  ctx.options.plan.target = target->id;
  ctx.options.plan.replicas = options.replicas;
  ctx.options.plan.engine = options.engine;
  K3_ASSIGN_OR_RETURN(Plan plan, BuildPlan(catalog, ctx.options.plan));
  ctx.model = plan.model;
  ctx.plan = plan.targets.front();
  if (!ctx.plan.fits) {
    return InvalidArgument(
        "{} does not fit on {} (see `k3 plan --target {}`): lower --max-model-len or "
        "--concurrency, or pick a larger --instance",
        ctx.model.id, ctx.plan.instance.id, target->id);
  }
  const bool alibaba = target->id == "alibaba-pai-eas" || target->id == "alibaba-ack";
  if (alibaba && options.weights.empty()) {
    return InvalidArgument(
        "--target {} mounts the weights from OSS: copy them there first (`k3 weights sync hf://{} "
        "oss://BUCKET/PREFIX`, from a machine in the region) and pass --weights oss://BUCKET/PREFIX",
        target->id, ctx.model.hf_id);
  }
  const std::string weights = options.weights.empty() ? "hf://" + ctx.model.hf_id : options.weights;
  K3_ASSIGN_OR_RETURN(ctx.weights, ParseWeightsUri(weights));
  if (options.engine == Engine::kK3 && options.image.empty()) {
    return InvalidArgument(
        "--engine k3 needs --image REGISTRY/k3:TAG: build it from this repository's Dockerfile and push it "
        "to your registry (docs/deploy.md, \"The k3 image\"); k3stack publishes none");
  }
  ctx.image = options.image.empty() ? kVllmImage : options.image;
  ctx.app_name = "kimi-k3";
  if (ctx.model.id != "kimi-k3") {
    ctx.app_name.clear();
    for (char c : ctx.model.served_name) {
      if (std::isalnum(static_cast<unsigned char>(c))) ctx.app_name += static_cast<char>(std::tolower(c));
      if ((c == '-' || c == '_' || c == '.') && !ctx.app_name.empty() && ctx.app_name.back() != '-')
        ctx.app_name += '-';
    }
    while (!ctx.app_name.empty() && ctx.app_name.back() == '-') ctx.app_name.pop_back();
    if (ctx.app_name.empty()) ctx.app_name = "model";
    if (ctx.app_name.size() > 40) ctx.app_name.resize(40);
  }
  ctx.version = "0.1.0";
  ctx.serve.engine = options.engine;
  ctx.serve.served_name = ctx.model.served_name;
  ctx.serve.parsers = ctx.model.vllm_parsers;
  ctx.serve.layout = ctx.plan.layout;
  ctx.serve.max_model_len = options.plan.max_model_len;
  // k3 ranks: one per NUMA node on CPU instances (the plan's TP), one per node of a multi-node GPU group.
  ctx.serve.k3_world = ctx.plan.cpu_only ? ctx.plan.layout.tp : ctx.plan.layout.nodes;
  // Every target that copies or mounts the weights serves the directory they land in (the writer's path
  // is the reader's path); only the managed endpoints without a volume pull from the hub at start.
  ctx.model_dir = std::string(kModelRoot) + "/" + ctx.model.served_name;
  const bool managed = target->id == "azure-ml" || target->id == "gcp-vertex";
  ctx.serve.model_ref = managed ? ctx.model.hf_id : ctx.model_dir;
  // On the Kubernetes targets both engines stream s3:// / gs:// / az:// weights at every start instead of
  // copying them to a volume: vLLM with RunAI Model Streamer, k3 with its own loader (oss:// is refused
  // there by CheckServable: the OSS CSI volume of --target alibaba-ack is its path).
  const std::string& t = target->id;
  const bool pvc_target = t == "aws-eks" || t == "azure-aks" || t == "gcp-gke" || t == "k8s";
  const std::string& scheme = ctx.weights.scheme;
  if (pvc_target && (scheme == "s3" || scheme == "gs" || scheme == "az")) {
    ctx.stream_weights = true;
    ctx.serve.stream_from_bucket = true;
    if (options.engine == Engine::kK3) {
      ctx.serve.model_ref = ctx.weights.uri;
      // Each rank of an expert-parallel group reads only its own routed experts (and the other tensors)
      // from the bucket; a tensor-parallel rank would read every expert whole, ranks x 1.56 TB per node.
      // (Only where the ranks divide the experts, as `k3 serve` requires; else every rank reads them all.)
      const int64_t experts = ctx.model.routed_experts;
      ctx.serve.expert_parallel = ctx.serve.k3_world > 1 && experts > 0 && experts % ctx.serve.k3_world == 0;
    } else {
      // RunAI names a blob az://CONTAINER/PREFIX and takes the account from AZURE_STORAGE_ACCOUNT_NAME.
      ctx.serve.model_ref = scheme == "az" ? "az://" + ctx.weights.bucket +
                                                 (ctx.weights.path.empty() ? "" : "/" + ctx.weights.path)
                                           : ctx.weights.uri;
    }
  }
  K3_RETURN_IF_ERROR(CheckServable(ctx));
  // The probes wait for the slowest link: a volume that reads slower than the planned bandwidth sets them.
  std::string why;
  const double volume_bps = WeightsVolumeReadBps(ctx, why);
  if (volume_bps > 0 && volume_bps < plan.bandwidth_bps) {
    ctx.plan.probes = DeriveProbeBudget(ctx.model.weight_bytes, volume_bps);
    ctx.volume_rate_note = fmt::format("{}, below the planned {}: the probes allow {} to load", why,
                                       plan.bandwidth_text, FormatDuration(ctx.plan.probes.load_seconds));
  }
  if (options.gateway) {
    const std::string& t = target->id;
    if (t != "aws-eks" && t != "azure-aks" && t != "gcp-gke" && t != "k8s") {
      return InvalidArgument(
          "--gateway on --target {}: the Inference Gateway is rendered for the Kubernetes targets that run "
          "the serving pods themselves (aws-eks, azure-aks, gcp-gke, k8s); on an ACK cluster use --target "
          "k8s",
          t);
    }
    K3_RETURN_IF_ERROR(GatewayImplementation(ctx).status());
  } else if (!options.gateway_impl.empty()) {
    return InvalidArgument("--gateway-impl {}: only with --gateway", options.gateway_impl);
  }
  if (!options.compute.empty()) {
    if (target->id != "azure-ml") {
      return InvalidArgument("--compute {}: only for --target azure-ml (managed | kubernetes)",
                             options.compute);
    }
    if (options.compute != "managed" && options.compute != "kubernetes") {
      return InvalidArgument("--compute '{}': one of managed, kubernetes", options.compute);
    }
  }
  K3_RETURN_IF_ERROR(CheckOps(ctx));
  K3_ASSIGN_OR_RETURN(std::vector<RenderedFile> files, renderer->second(ctx));
  for (RenderedFile& f : OpsFiles(ctx)) files.push_back(std::move(f));
  return files;
}

}  // namespace k3::deploy
