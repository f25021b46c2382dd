// k3 render: Plan + options -> files (manifests, scripts, service JSON). Pure data -> text: one function
// per target builds ordered JSON trees (yaml_emit.h) or script text from the plan; cloud differences are
// small overlays (node selectors, tolerations, storage), never copied YAML. Output is deterministic.
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/deploy/catalog.h"
#include "src/deploy/engine_command.h"
#include "src/deploy/plan.h"
#include "src/deploy/yaml_emit.h"

namespace k3::deploy {

// --autoscale MIN:MAX and its companions (render_ops.h): queue-driven replica counts.
struct AutoscaleOptions {
  bool enabled = false;
  int min = 1;  // MIN 0 = scale to zero (PAI-EAS only, within --max-cold-start)
  int max = 1;
  std::string autoscaler;           // --autoscaler keda | hpa ("" = keda)
  int max_cold_start_seconds = -1;  // --max-cold-start: the cold start the user accepts (-1 = not set)
  std::string prometheus_url;       // --prometheus-url ("" = the target's metrics stack, render_ops.h)
};

struct RenderOptions {
  std::string target;
  Engine engine = Engine::kVllm;
  std::string image;  // "" = the engine's default image (vllm/vllm-openai:kimi-k3); required for k3
  int replicas = 1;
  std::string
      weights;  // hf://org/name (default: the model's hub id) | s3:// | az://ACCOUNT/.. | gs:// | oss://
  std::string name_space;  // --namespace ("" = none written)
  // --region: the bucket's region where a file names it (HyperPod s3Storage.region, the ACK OSS endpoint
  // oss-REGION-internal.aliyuncs.com); required there, refused nowhere.
  std::string region;
  // --compute (azure-ml): "managed" (default: a managed online endpoint) | "kubernetes" (Azure ML
  // Kubernetes compute: the AzureML extension on an AKS cluster, render_azureml_k8s.h).
  std::string compute;
  bool gateway = false;      // Inference Gateway stack (render_gateway.h)
  std::string gateway_impl;  // --gateway-impl: kgateway | istio (gke on gcp-gke); "" = the target's default
  PlanOptions plan;          // model, instance, max-model-len, bandwidth, prefer_pp
  AutoscaleOptions autoscale;
  bool monitoring = false;  // --monitoring: scrape object + Grafana dashboard (render_ops.h)
};

struct WeightsSource {
  std::string scheme;   // hf | s3 | az | gs | oss
  std::string uri;      // as given (the URI `k3 weights sync` and `k3 serve` take)
  std::string account;  // az: the storage account; empty otherwise
  std::string bucket;   // bucket / container / hub org
  std::string path;     // prefix inside the bucket / hub name
};

struct RenderedFile {
  std::string path;     // relative to --out
  std::string content;  // final text
};

// Everything a target renderer needs; built once by Render().
struct RenderContext {
  RenderOptions options;
  ModelSpec model;
  TargetPlan plan;
  WeightsSource weights;
  ServeSpec serve;
  std::string app_name;  // "kimi-k3": object names and labels
  std::string image;
  std::string model_dir;  // where the weights land and the engine reads them: "/mnt/models/Kimi-K3"
  // A Kubernetes target with s3:// / gs:// / az:// weights: the engine streams them at every start
  // (serve.model_ref is the bucket URI) and no volume holds them. vLLM: through RunAI Model Streamer, no
  // pre-sync Job (the bucket is filled beforehand). k3: its own loader; its pre-sync Job fills the bucket
  // from the hub.
  bool stream_weights = false;
  // weights.yaml holds a pre-sync Job (and, without streaming, the PVC it fills).
  bool presync_job() const { return !stream_weights || options.engine == Engine::kK3; }
  // The most serving groups that may run at once: --replicas, or --autoscale's MAX when larger (a volume
  // they share is ReadWriteMany).
  int max_replicas() const {
    return options.autoscale.enabled && options.autoscale.max > plan.replicas ? options.autoscale.max
                                                                              : plan.replicas;
  }
  std::string version;  // app.kubernetes.io/version
  // Where the rendered weights volume reads slower than --weights-bandwidth: why, and the probes are sized
  // from the volume's rate ("" = the plan's bandwidth holds).
  std::string volume_rate_note;
};

Result<WeightsSource> ParseWeightsUri(const std::string& uri);

// Renders every file of options.target. Errors name the flag and the fix.
Result<std::vector<RenderedFile>> Render(const Catalog& catalog, const RenderOptions& options);

// Joins YAML documents with "---" after a comment header (one line per entry of `header`).
std::string YamlFile(const std::vector<std::string>& header, const std::vector<Doc>& docs);

// Per-target renderers (render_*.cc).
Result<std::vector<RenderedFile>> RenderHyperPod(const RenderContext& ctx);
Result<std::vector<RenderedFile>> RenderEks(const RenderContext& ctx);
Result<std::vector<RenderedFile>> RenderLwsTarget(const RenderContext& ctx);  // azure-aks, gcp-gke, k8s
Result<std::vector<RenderedFile>> RenderAzureMl(const RenderContext& ctx);
Result<std::vector<RenderedFile>> RenderVertex(const RenderContext& ctx);
Result<std::vector<RenderedFile>> RenderPaiEas(const RenderContext& ctx);
Result<std::vector<RenderedFile>> RenderAck(const RenderContext& ctx);

// A NOTES.md for every target: plan summary, capacity and cleanup notes, apply and verify commands.
RenderedFile RenderNotes(const RenderContext& ctx, const std::vector<std::string>& apply_commands);

}  // namespace k3::deploy
