// Managed-endpoint targets: azure-ml (Azure ML CLI v2 endpoint + deployment YAML and a Dockerfile that bakes
// the engine command, since managed deployments take no container args) and gcp-vertex (gcloud script).
// Both carry the guide's warnings: GB300 SKU availability on AML, Vertex A4X's 18-replica minimum.
// azure-ml --compute kubernetes: the same deployment on AKS-attached Kubernetes compute
// (render_azureml_k8s.h).
#include "src/deploy/plan_format.h"
#include "src/deploy/render_azureml_k8s.h"
#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_scripts.h"

namespace k3::deploy {
namespace {

std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + Doc(items[i]).dump();
  return out + "]";
}

std::vector<std::string> EngineArgv(const RenderContext& ctx) {
  if (ctx.options.engine == Engine::kK3) {
    std::vector<std::string> argv = K3ServeArgv(ctx.serve);
    argv.insert(argv.begin(), "k3");
    return argv;
  }
  std::vector<std::string> argv = {"vllm", "serve", ctx.serve.model_ref};
  for (std::string& f : VllmFlags(ctx.serve)) argv.push_back(std::move(f));
  argv.insert(argv.end(), {"--port", std::to_string(ctx.serve.port)});
  return argv;
}

std::vector<std::string> Warnings(const RenderContext& ctx) {
  std::vector<std::string> w = ctx.plan.warnings;
  // The plan's notes: the guide's capacity notes for the default instance, or the instance's own.
  for (const std::string& n : ctx.plan.notes) {
    if (n.rfind("Cleanup: ", 0) != 0) w.push_back(n);
  }
  return w;
}

}  // namespace

Result<std::vector<RenderedFile>> RenderAzureMl(const RenderContext& ctx) {
  const ProbeBudget& p = ctx.plan.probes;
  Doc endpoint = {
      {"$schema", "https://azuremlschemas.azureedge.net/latest/managedOnlineEndpoint.schema.json"},
      {"name", ctx.app_name},
      {"auth_mode", "key"}};
  Doc route = [&](const std::string& path) {
    return Doc{{"port", ctx.serve.port}, {"path", path}};
  }("/health");
  Doc env_vars = Doc::object();
  for (const auto& [name, value] : EngineEnv(ctx.model, ctx.options.engine)) env_vars[name] = value;
  Doc deployment = {
      {"$schema", "https://azuremlschemas.azureedge.net/latest/managedOnlineDeployment.schema.json"},
      {"name", ctx.app_name + "-" + EngineName(ctx.options.engine)},
      {"endpoint_name", ctx.app_name},
      {"environment",
       {{"build", {{"path", "."}}},
        {"inference_config",
         {{"liveness_route", route},
          {"readiness_route", route},
          {"scoring_route", {{"port", ctx.serve.port}, {"path", "/v1/chat/completions"}}}}}}},
      {"instance_type", ctx.plan.instance.id},
      {"instance_count", ctx.plan.replicas},
      {"environment_variables", env_vars},
      {"request_settings", {{"request_timeout_ms", 180000}}},
      {"liveness_probe",
       {{"initial_delay", p.startup_budget_seconds},
        {"period", 30},
        {"timeout", 10},
        {"failure_threshold", 5}}},
      {"readiness_probe",
       {{"initial_delay", static_cast<int>(p.load_seconds)},
        {"period", p.readiness_period_seconds},
        {"timeout", 10},
        {"failure_threshold", p.startup_failure_threshold}}}};
  // --compute kubernetes: the same deployment on Kubernetes compute attached to AKS.
  const bool kubernetes = ctx.options.compute == "kubernetes";
  const AzureMlKubernetes k8s =
      kubernetes ? AzureMlOnKubernetes(ctx, endpoint, deployment) : AzureMlKubernetes{};
  std::vector<std::string> header = {
      kubernetes ? "Azure ML online endpoint on Kubernetes compute " + std::string(kAmlK8sCompute) +
                       " (az ml online-endpoint/deployment create)"
                 : "Azure ML managed online endpoint (az ml online-endpoint/deployment create)"};
  for (const std::string& w : Warnings(ctx)) header.push_back("WARNING: " + w);
  std::string dockerfile =
      "# The managed deployment takes no container args: bake the engine command.\nFROM " + ctx.image +
      "\nENTRYPOINT " + JsonArray(EngineArgv(ctx)) + "\n";
  // A chat request for `az ml online-endpoint invoke --request-file` (NOTES.md, Verify).
  const Doc request = {{"model", ctx.model.served_name},
                       {"messages", Doc::array({Doc{{"role", "user"}, {"content", "Hello"}}})},
                       {"max_tokens", 16}};
  std::vector<RenderedFile> files = {{"endpoint.yml", YamlFile(header, {endpoint})},
                                     {"deployment.yml", YamlFile(header, {deployment})},
                                     {"Dockerfile", dockerfile},
                                     {"request.json", request.dump(2) + "\n"}};
  files.insert(files.end(), k8s.files.begin(), k8s.files.end());
  // Azure ML's v2 commands are the `ml` extension of the Azure CLI; the workspace is named on each command.
  const std::string where = " --resource-group \"$RESOURCE_GROUP\" --workspace-name \"$WORKSPACE\"";
  files.push_back(CleanupScript(
      ctx,
      "RESOURCE_GROUP=${RESOURCE_GROUP:?set RESOURCE_GROUP}\nWORKSPACE=${WORKSPACE:?set WORKSPACE}\n\n"
      "run \"online endpoint " +
          ctx.app_name + " (and its deployments)\" az ml online-endpoint delete --name " + ctx.app_name +
          where + " --yes\n" + k8s.cleanup,
      kubernetes ? k8s.still_billing
                 : std::vector<std::string>{"any capacity reservation group for " + ctx.plan.instance.id +
                                            " (delete it separately)"}));
  std::vector<std::string> apply = {"az extension add --name ml --upgrade --yes"};
  if (kubernetes) apply.insert(apply.begin(), "bash setup-aml-k8s.sh");
  apply.push_back("az ml online-endpoint create -f endpoint.yml" + where);
  apply.push_back("az ml online-deployment create -f deployment.yml --all-traffic" + where);
  files.push_back(RenderNotes(ctx, apply));
  return files;
}

Result<std::vector<RenderedFile>> RenderVertex(const RenderContext& ctx) {
  const TargetPlan& p = ctx.plan;
  std::string s = "#!/usr/bin/env bash\n# Vertex AI Prediction for " + ctx.model.served_name +
                  " (rendered by k3 render; review before running).\n";
  for (const std::string& w : Warnings(ctx)) s += "# WARNING: " + w + "\n";
  s += fmt::format("# Cost at the {}-replica minimum: {} per hour, {} per month (730 h).\n",
                   std::max(p.cost.billed_instances, p.replicas), FormatCostPerHour(p.cost),
                   FormatCostPerMonth(p.cost));
  if (!p.cost.known) s += "#   (" + p.cost.unknown_reason + ")\n";
  // Rack-unit purchasing (A4X: 18) binds rack-bound instances only; the plan billed what applies.
  const int min_replicas = std::max(p.cost.billed_instances, p.replicas);
  std::string args;
  const std::vector<std::string> argv = EngineArgv(ctx);
  for (size_t i = 1; i < argv.size(); ++i) args += (i > 1 ? "," : "") + argv[i];
  std::string env;
  for (const auto& [name, value] : EngineEnv(ctx.model, ctx.options.engine)) {
    env += (env.empty() ? "" : ",") + name + "=" + value;
  }
  // Vertex pulls serving images from Artifact Registry only: copy the image there first.
  const std::string image_name = ctx.image.substr(ctx.image.find_last_of('/') + 1);
  s += fmt::format(
      "set -euo pipefail\nPROJECT_ID=${{PROJECT_ID:?set PROJECT_ID}}\nREGION=${{REGION:?set REGION}}\n"
      "REPOSITORY=${{REPOSITORY:-k3}}\nSOURCE_IMAGE={1}\n"
      "IMAGE=\"$REGION-docker.pkg.dev/$PROJECT_ID/$REPOSITORY/{9}\"\n\n"
      "# 1. Copy the serving image into Artifact Registry (Vertex does not pull from Docker Hub).\n"
      "gcloud artifacts repositories describe \"$REPOSITORY\" --project=\"$PROJECT_ID\" "
      "--location=\"$REGION\" >/dev/null 2>&1 ||\n"
      "  gcloud artifacts repositories create \"$REPOSITORY\" --project=\"$PROJECT_ID\" "
      "--location=\"$REGION\" --repository-format=docker\n"
      "gcloud auth configure-docker \"$REGION-docker.pkg.dev\" --quiet\n"
      "# Every platform of the source (a manifest list: arm64 for Grace hosts, amd64), registry to "
      "registry;\n"
      "# pulling, tagging and pushing would copy only this machine's platform.\n"
      "docker buildx imagetools create --tag \"$IMAGE\" \"$SOURCE_IMAGE\"\n\n"
      "# 2. Model, endpoint, deployment. The ids come from gcloud, never from hand-edited placeholders.\n"
      "gcloud ai models upload --project=\"$PROJECT_ID\" --region=\"$REGION\" \\\n"
      "  --display-name={0} \\\n  --container-image-uri=\"$IMAGE\" \\\n  --container-command={2} \\\n"
      "  --container-args='{3}' \\\n{4}  --container-ports={5} \\\n  --container-health-route=/health \\\n"
      "  --container-predict-route=/v1/chat/completions\n"
      "MODEL_ID=$(gcloud ai models list --project=\"$PROJECT_ID\" --region=\"$REGION\" "
      "--filter=display_name={0} --sort-by=~create_time --limit=1 --format='value(name.basename())')\n\n"
      "ENDPOINT_ID=${{ENDPOINT_ID:-}}\nif [[ -z \"$ENDPOINT_ID\" ]]; then\n"
      "  gcloud ai endpoints create --project=\"$PROJECT_ID\" --region=\"$REGION\" --display-name={0}\n"
      "  ENDPOINT_ID=$(gcloud ai endpoints list --project=\"$PROJECT_ID\" --region=\"$REGION\" "
      "--filter=display_name={0} --sort-by=~create_time --limit=1 --format='value(name.basename())')\nfi\n\n"
      "# deploy-model bills min-replica-count x {6} from the moment it starts.\n"
      "gcloud ai endpoints deploy-model \"$ENDPOINT_ID\" --project=\"$PROJECT_ID\" --region=\"$REGION\" "
      "\\\n  --model=\"$MODEL_ID\" --display-name={0} \\\n  --machine-type={6} \\\n"
      "  --accelerator=type={10},count={7} \\\n  --min-replica-count={8} --max-replica-count={8}\n"
      "echo \"endpoint $ENDPOINT_ID serves model $MODEL_ID\"\n",
      ctx.app_name, ctx.image, argv[0], args, env.empty() ? "" : "  --container-env-vars=" + env + " \\\n",
      ctx.serve.port, p.instance.id, p.instance.gpu_count, min_replicas, image_name,
      p.instance.gcp_accelerator);
  std::vector<RenderedFile> files = {{"deploy-vertex.sh", s}};
  // Undeploy every model of the endpoint (each deployed model bills its replicas), then the endpoint and
  // the model; the ids come from gcloud as in deploy-vertex.sh.
  const std::string where = " --project=\"$PROJECT_ID\" --region=\"$REGION\"";
  std::string cleanup =
      "PROJECT_ID=${PROJECT_ID:?set PROJECT_ID}\nREGION=${REGION:?set REGION}\n"
      "ENDPOINT_ID=${ENDPOINT_ID:-$(gcloud ai endpoints list" +
      where + " --filter=display_name=" + ctx.app_name +
      " --format='value(name.basename())' 2>/dev/null | head -n 1)}\n"
      "MODEL_ID=$(gcloud ai models list" +
      where + " --filter=display_name=" + ctx.app_name +
      " --format='value(name.basename())' 2>/dev/null | head -n 1)\n\n"
      "if [[ -n \"$ENDPOINT_ID\" ]]; then\n"
      "  for d in $(gcloud ai endpoints describe \"$ENDPOINT_ID\"" +
      where +
      " --format='value(deployedModels.id)' 2>/dev/null | tr ';' ' '); do\n"
      "    run \"deployed model $d\" gcloud ai endpoints undeploy-model \"$ENDPOINT_ID\"" +
      where +
      " --deployed-model-id=\"$d\" --quiet\n  done\n"
      "  run \"endpoint $ENDPOINT_ID\" gcloud ai endpoints delete \"$ENDPOINT_ID\"" +
      where +
      " --quiet\n"
      "else\n  echo \"no endpoint named " +
      ctx.app_name +
      ": none to delete\"\nfi\n"
      "if [[ -n \"$MODEL_ID\" ]]; then\n  run \"model $MODEL_ID\" gcloud ai models delete \"$MODEL_ID\"" +
      where + " --quiet\nfi\n";
  files.push_back(
      CleanupScript(ctx, cleanup,
                    {"the " + p.instance.id + " reservation (release it separately)",
                     "the serving image in Artifact Registry (repository REPOSITORY of deploy-vertex.sh)"}));
  files.push_back(RenderNotes(ctx, {"bash deploy-vertex.sh"}));
  return files;
}

}  // namespace k3::deploy
