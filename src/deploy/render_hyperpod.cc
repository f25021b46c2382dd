// Target aws-hyperpod: the SageMaker HyperPod Inference Operator's InferenceEndpointConfig (v1), as in the
// guide's §3.1, with probes and the deploy timeout taken from the plan.
#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_scripts.h"

namespace k3::deploy {
namespace {

constexpr int kDefaultMaxDeploySeconds = 3600;           // the CRD's default for spec.maxDeployTimeInSeconds
constexpr const char* kOperatorMount = "/opt/ml/model";  // where the operator mounts the model source

Doc ModelSource(const RenderContext& ctx) {
  const WeightsSource& w = ctx.weights;
  if (w.scheme == "s3") {
    Doc s3 = {{"s3Storage", {{"bucketName", w.bucket}, {"region", ctx.options.region}}}};
    if (!w.path.empty()) s3["modelLocation"] = w.path;
    s3["modelSourceType"] = "s3";
    return s3;
  }
  return Doc{{"huggingFaceModel", {{"modelId", w.bucket + "/" + w.path}}},
             {"modelSourceType", "huggingface"}};
}

Doc Probe(const RenderContext& ctx, int period, int failures) {
  return Doc{{"httpGet", {{"path", "/health"}, {"port", ctx.serve.port}}},
             {"periodSeconds", period},
             {"failureThreshold", failures}};
}

}  // namespace

Result<std::vector<RenderedFile>> RenderHyperPod(const RenderContext& ctx) {
  if (ctx.weights.scheme != "hf" && ctx.weights.scheme != "s3") {
    return InvalidArgument(
        "--weights {}: aws-hyperpod loads from hf:// or s3:// (modelSourceType huggingface or s3)",
        ctx.weights.uri);
  }
  if (ctx.weights.scheme == "s3" && !ValidRegion(ctx.options.region)) {
    return InvalidArgument(
        "--weights {}: the operator's s3Storage names the bucket's region: pass --region (e.g. us-east-1)",
        ctx.weights.uri);
  }
  if (ctx.plan.layout.nodes != 1) {
    return InvalidArgument(
        "aws-hyperpod serves one instance per replica, but {} needs {} x {}: pass an --instance "
        "with more GPU memory",
        ctx.model.id, ctx.plan.layout.nodes, ctx.plan.instance.id);
  }
  const ProbeBudget& p = ctx.plan.probes;
  const int gpus = ctx.plan.instance.gpu_count;
  Doc worker = Doc::object();
  worker["image"] = ctx.image;
  worker["modelInvocationPort"] = {{"containerPort", ctx.serve.port}, {"name", "http"}};
  worker["modelVolumeMount"] = {{"mountPath", kOperatorMount}, {"name", "model-weights"}};
  // The engine reads what the operator mounts, whatever the source: the operator downloads a huggingface
  // model (or mounts the s3 prefix) at /opt/ml/model, and a repo id would make vLLM download 1.56 TB
  // again at every start (dry run 2, defect 1).
  ServeSpec serve = ctx.serve;
  serve.model_ref = kOperatorMount;
  // k3 computes on the host CPUs: its rank asks for the planned RAM, no GPU (render_k8s_common.h).
  worker["resources"] = ctx.plan.cpu_only ? CpuResources(ctx)
                                          : Doc{{"limits", {{"nvidia.com/gpu", gpus}}},
                                                {"requests", {{"nvidia.com/gpu", gpus}}}};
  if (ctx.options.engine == Engine::kVllm) {
    worker["args"] = VllmArgv(serve);
  } else {
    worker["command"] = Doc::array({"k3"});
    worker["args"] = K3ServeArgv(serve);
  }
  Doc env = Doc::array();
  for (const auto& [name, value] : EngineEnv(ctx.model, ctx.options.engine)) {
    env.push_back(Doc{{"name", name}, {"value", value}});
  }
  // A missing file under the mount is an error, never a second download.
  if (ctx.options.engine == Engine::kVllm) env.push_back(Doc{{"name", "HF_HUB_OFFLINE"}, {"value", "1"}});
  if (!env.empty()) worker["environmentVariables"] = env;
  worker["probes"] = {
      {"startupProbe", Probe(ctx, p.startup_period_seconds, p.startup_failure_threshold)},
      {"readinessProbe", Probe(ctx, p.readiness_period_seconds, p.readiness_failure_threshold)},
      {"livenessProbe", Probe(ctx, p.liveness_period_seconds, p.liveness_failure_threshold)}};

  Doc spec = Doc::object();
  spec["modelName"] = ctx.model.served_name;
  spec["instanceType"] = ctx.plan.instance.id;
  spec["invocationEndpoint"] = "v1/chat/completions";
  spec["replicas"] = ctx.plan.replicas;
  // The operator gives up on a deployment after maxDeployTimeInSeconds: cover the planned startup budget.
  const int deploy_seconds = p.startup_budget_seconds + 600;
  if (deploy_seconds > kDefaultMaxDeploySeconds) spec["maxDeployTimeInSeconds"] = deploy_seconds;
  spec["modelSourceConfig"] = ModelSource(ctx);
  spec["worker"] = worker;

  std::string name;
  for (char c : ctx.app_name) {
    if (c != '-') name += c;
  }
  Doc iec = {{"apiVersion", "inference.sagemaker.aws.amazon.com/v1"},
             {"kind", "InferenceEndpointConfig"},
             {"metadata", ObjectMeta(ctx, name, "serving")},
             {"spec", spec}};
  std::vector<std::string> header = {
      fmt::format("{} on SageMaker HyperPod: {} x {} per replica, TP={}", ctx.model.served_name, 1,
                  ctx.plan.instance.id, ctx.plan.layout.tp),
      fmt::format("startup budget {} s = 2 x planned load {:.0f} s + 600 s (k3 plan)",
                  p.startup_budget_seconds, p.load_seconds)};
  std::vector<RenderedFile> files = {{ctx.app_name + ".yaml", YamlFile(header, {iec})}};
  std::vector<std::string> apply;
  for (RenderedFile& f : NamespaceFile(ctx)) {
    apply.push_back("kubectl apply -f " + f.path);
    files.push_back(std::move(f));
  }
  apply.push_back("kubectl apply -f " + ctx.app_name + ".yaml");
  apply.push_back("kubectl get inferenceendpointconfig" + KubectlNamespace(ctx) + " " + name + " -w");
  std::string cleanup = "run \"InferenceEndpointConfig " + name +
                        " (its SageMaker endpoint and pods)\" "
                        "kubectl delete -f " +
                        ctx.app_name + ".yaml --ignore-not-found\n";
  if (!ctx.options.name_space.empty()) {
    cleanup += "run \"namespace " + ctx.options.name_space +
               "\" kubectl delete -f namespace.yaml --ignore-not-found\n";
  }
  files.push_back(CleanupScript(
      ctx, cleanup, {"the Flexible Training Plan (billed for its whole term) and the HyperPod cluster"}));
  files.push_back(RenderNotes(ctx, apply));
  return files;
}

}  // namespace k3::deploy
