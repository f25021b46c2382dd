// Target aws-hyperpod: the SageMaker HyperPod Inference Operator's InferenceEndpointConfig (v1), as in the
// guide's §3.1, with probes and the deploy timeout taken from the plan.
#include "src/deploy/render_k8s_common.h"

namespace k3::deploy {
namespace {

constexpr int kDefaultMaxDeploySeconds = 3600;           // the CRD's default for spec.maxDeployTimeInSeconds
constexpr const char* kOperatorMount = "/opt/ml/model";  // where the operator mounts the model source

Doc ModelSource(const RenderContext& ctx) {
  const WeightsSource& w = ctx.weights;
  if (w.scheme == "s3") {
    Doc s3 = {{"s3Storage", {{"bucketName", w.bucket}, {"region", "<AWS_REGION>"}}}};
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
  // The engine reads what the operator mounts. vLLM with hub weights keeps the guide's repo id (the
  // operator's huggingface source); s3 weights and `k3 serve` (which takes a directory only) read the mount.
  ServeSpec serve = ctx.serve;
  const bool hub_id = ctx.weights.scheme == "hf" && ctx.options.engine == Engine::kVllm;
  serve.model_ref = hub_id ? ctx.weights.bucket + "/" + ctx.weights.path : kOperatorMount;
  worker["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}, {"requests", {{"nvidia.com/gpu", gpus}}}};
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
  files.push_back(RenderNotes(ctx, {"kubectl apply -f " + ctx.app_name + ".yaml",
                                    "kubectl get inferenceendpointconfig " + name + " -w"}));
  return files;
}

}  // namespace k3::deploy
