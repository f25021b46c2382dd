// --autoscale MIN:MAX (render_ops.h): the checks, KEDA ScaledObject / HPA + prometheus-adapter values on the
// Kubernetes targets, the PAI-EAS autoscaler body, and the NOTES / apply / cleanup lines of both add-ons.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "src/deploy/plan_format.h"
#include "src/deploy/render_identity.h"
#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_ops.h"
#include "src/deploy/render_ops_internal.h"
#include "src/deploy/render_workload.h"

namespace k3::deploy {
namespace {

constexpr const char* kKedaVersion = "2.20.2";  // the chart and CRD release (tests/deploy/crds)
// HPA bounds a stabilization window to 3600 s and a scaling policy's period to 1800 s.
constexpr int kMaxStabilizationSeconds = 3600;
constexpr int kMaxPolicyPeriodSeconds = 1800;

int ColdStartSeconds(const RenderContext& ctx) {
  return static_cast<int>(std::ceil(ctx.plan.probes.load_seconds));
}

std::string Autoscaler(const RenderContext& ctx) {
  return ctx.options.autoscale.autoscaler.empty() ? "keda" : ctx.options.autoscale.autoscaler;
}

std::string RangeText(const AutoscaleOptions& a) { return fmt::format("{}:{}", a.min, a.max); }

// Why a target gets neither add-on from k3, with the fix ("" = it does).
std::string Unsupported(const std::string& target, bool autoscale) {
  if (target == "aws-hyperpod") {
    return "the HyperPod operator's SageMaker endpoint scales through the InferenceEndpointConfig's own "
           "autoscaling and CloudWatch, which k3 does not render: use --target aws-eks";
  }
  if (target == "azure-ml") {
    return "a managed online endpoint scales through Azure Monitor autoscale settings and reports its "
           "metrics to Azure Monitor, which k3 does not render: use --target azure-aks";
  }
  if (target == "gcp-vertex") {
    return "a Vertex endpoint scales its replicas on CPU / GPU utilisation and reports to Cloud Monitoring, "
           "not on the server's vLLM metrics: use --target gcp-gke";
  }
  if (target == "alibaba-ack") {
    return "KServe creates and owns the predictor's HorizontalPodAutoscaler: use --target k8s on the ACK "
           "cluster (a Deployment or LeaderWorkerSet that k3 scales and scrapes)";
  }
  if (target == "alibaba-pai-eas" && !autoscale) {
    return "an EAS service's metrics are EAS's own (console, CloudMonitor); k3 renders no scrape object for "
           "it";
  }
  return "";
}

Doc Behavior(const RenderContext& ctx) {
  const int cold = ColdStartSeconds(ctx);
  // Up: one serving group at a time per cold start (a new group does not relieve the queue before it has
  // loaded); down: hold a group at least one cold start's time, so a dip does not cost a reload.
  return Doc{
      {"scaleUp",
       {{"stabilizationWindowSeconds", 0},
        {"policies", Doc::array({Doc{{"type", "Pods"},
                                     {"value", 1},
                                     {"periodSeconds", std::clamp(cold, 60, kMaxPolicyPeriodSeconds)}}})}}},
      {"scaleDown",
       {{"stabilizationWindowSeconds", std::clamp(cold, 300, kMaxStabilizationSeconds)},
        {"policies", Doc::array({Doc{{"type", "Pods"}, {"value", 1}, {"periodSeconds", 300}}})}}}};
}

Doc ScaleTargetRef(const RenderContext& ctx) {
  if (ctx.plan.layout.nodes > 1) {
    return Doc{{"apiVersion", "leaderworkerset.x-k8s.io/v1"},
               {"kind", "LeaderWorkerSet"},
               {"name", WorkloadName(ctx)}};
  }
  return Doc{{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", WorkloadName(ctx)}};
}

std::string Selector(const RenderContext& ctx) { return MetricSelector(ctx); }

Doc ScaledObject(const RenderContext& ctx) {
  const AutoscaleOptions& a = ctx.options.autoscale;
  const std::string url = PrometheusQueryUrl(ctx);
  Doc waiting = {{"type", "prometheus"},
                 {"name", "requests-waiting"},
                 {"metricType", "AverageValue"},
                 {"metadata",
                  {{"serverAddress", url},
                   {"query", "sum(vllm:num_requests_waiting{" + Selector(ctx) + "})"},
                   {"threshold", std::to_string(kTargetWaitingPerGroup)}}}};
  Doc cache = {{"type", "prometheus"},
               {"name", "kv-cache-usage"},
               {"metricType", "Value"},
               {"metadata",
                {{"serverAddress", url},
                 {"query", "avg(vllm:kv_cache_usage_perc{" + Selector(ctx) + "})"},
                 {"threshold", fmt::format("{}", kTargetKvCacheUsage)}}}};
  Doc spec = {{"scaleTargetRef", ScaleTargetRef(ctx)},
              {"pollingInterval", 30},
              {"minReplicaCount", a.min},
              {"maxReplicaCount", a.max},
              {"advanced", {{"horizontalPodAutoscalerConfig", {{"behavior", Behavior(ctx)}}}}},
              {"triggers", Doc::array({waiting, cache})}};
  return Doc{{"apiVersion", "keda.sh/v1alpha1"},
             {"kind", "ScaledObject"},
             {"metadata", ObjectMeta(ctx, ctx.app_name, "autoscaling")},
             {"spec", spec}};
}

// prometheus-adapter names a series vllm:X as the custom metric vllm_X (a ':' cannot be part of a
// custom-metrics API path segment it serves).
std::string AdapterMetric(const std::string& series) { return "vllm_" + series.substr(series.find(':') + 1); }

Doc PodsMetric(const std::string& series, const std::string& average) {
  return Doc{{"type", "Pods"},
             {"pods",
              {{"metric", {{"name", AdapterMetric(series)}}},
               {"target", {{"type", "AverageValue"}, {"averageValue", average}}}}}};
}

Doc HorizontalPodAutoscaler(const RenderContext& ctx) {
  const AutoscaleOptions& a = ctx.options.autoscale;
  Doc spec = {
      {"scaleTargetRef", ScaleTargetRef(ctx)},
      {"minReplicas", a.min},
      {"maxReplicas", a.max},
      {"metrics", Doc::array({PodsMetric("vllm:num_requests_waiting", std::to_string(kTargetWaitingPerGroup)),
                              PodsMetric("vllm:kv_cache_usage_perc",
                                         fmt::format("{}m", std::lround(kTargetKvCacheUsage * 1000)))})},
      {"behavior", Behavior(ctx)}};
  return Doc{{"apiVersion", "autoscaling/v2"},
             {"kind", "HorizontalPodAutoscaler"},
             {"metadata", ObjectMeta(ctx, ctx.app_name, "autoscaling")},
             {"spec", spec}};
}

// Helm values of prometheus-community/prometheus-adapter: only the two series the HPA reads, per pod.
std::string AdapterValues(const RenderContext& ctx) {
  const std::string url = PrometheusQueryUrl(ctx);
  const size_t port_at = url.rfind(':');
  Doc rules = Doc::array();
  for (const char* series : {"vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}) {
    rules.push_back(
        Doc{{"seriesQuery", std::string(series) + "{namespace!=\"\",pod!=\"\"}"},
            {"resources",
             {{"overrides", {{"namespace", {{"resource", "namespace"}}}, {"pod", {{"resource", "pod"}}}}}}},
            {"name", {{"matches", "^vllm:(.*)$"}, {"as", "vllm_${1}"}}},
            {"metricsQuery", "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"}});
  }
  Doc values = {
      {"prometheus", {{"url", url.substr(0, port_at)}, {"port", std::stoi(url.substr(port_at + 1))}}},
      {"rules", {{"default", false}, {"custom", rules}}}};
  return YamlFile({"Helm values of prometheus-community/prometheus-adapter (NOTES.md installs it): serves",
                   "vllm:num_requests_waiting / vllm:kv_cache_usage_perc per pod as vllm_* custom metrics"},
                  {values});
}

bool IsKubernetes(const std::string& t) {
  return t == "aws-eks" || t == "azure-aks" || t == "gcp-gke" || t == "k8s";
}

}  // namespace

std::string MetricNamespace(const RenderContext& ctx) {
  return ctx.options.name_space.empty() ? "default" : ctx.options.name_space;
}

std::string MetricSelector(const RenderContext& ctx) {
  return "namespace=\"" + MetricNamespace(ctx) + "\",model_name=\"" + ctx.model.served_name + "\"";
}

bool UsesGmp(const RenderContext& ctx) { return ctx.plan.target.id == "gcp-gke"; }

bool WritesScrapeObjects(const RenderContext& ctx) {
  return IsKubernetes(ctx.plan.target.id) && (ctx.options.monitoring || ctx.options.autoscale.enabled);
}

std::string PrometheusQueryUrl(const RenderContext& ctx) {
  if (!ctx.options.autoscale.prometheus_url.empty()) return ctx.options.autoscale.prometheus_url;
  if (UsesGmp(ctx)) return "http://" + GmpFrontendName(ctx) + "." + MetricNamespace(ctx) + ".svc:9090";
  return std::string("http://") + kPrometheusService + ".monitoring.svc:9090";
}

Status ParseAutoscaleRange(const std::string& text, AutoscaleOptions& out) {
  const size_t colon = text.find(':');
  auto number = [](std::string_view s, int& v) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  };
  int min = 0;
  int max = 0;
  if (colon == std::string::npos || !number(std::string_view(text).substr(0, colon), min) ||
      !number(std::string_view(text).substr(colon + 1), max)) {
    return InvalidArgument("--autoscale '{}': expected MIN:MAX serving groups, e.g. --autoscale 1:4", text);
  }
  if (min < 0 || min >= max) {
    return InvalidArgument(
        "--autoscale {}: need 0 <= MIN < MAX, e.g. --autoscale 1:4 (a fixed count is --replicas N; PAI-EAS "
        "also requires max > min)",
        text);
  }
  out.enabled = true;
  out.min = min;
  out.max = max;
  return OkStatus();
}

Status CheckOps(const RenderContext& ctx) {
  const AutoscaleOptions& a = ctx.options.autoscale;
  const std::string& t = ctx.plan.target.id;
  if (!a.enabled) {
    if (!a.autoscaler.empty() || !a.prometheus_url.empty() || a.max_cold_start_seconds >= 0) {
      return InvalidArgument(
          "--autoscaler / --prometheus-url / --max-cold-start only with --autoscale MIN:MAX (e.g. "
          "--autoscale "
          "1:4)");
    }
  }
  if (ctx.options.monitoring) {
    if (std::string why = Unsupported(t, false); !why.empty()) {
      return InvalidArgument("--monitoring on --target {}: {}", t, why);
    }
  }
  if (!a.enabled) return OkStatus();
  if (std::string why = Unsupported(t, true); !why.empty()) {
    return InvalidArgument("--autoscale on --target {}: {}", t, why);
  }
  const std::string range = RangeText(a);
  if (Autoscaler(ctx) != "keda" && Autoscaler(ctx) != "hpa") {
    return InvalidArgument(
        "--autoscaler '{}': one of keda (KEDA ScaledObject, the default), hpa "
        "(HorizontalPodAutoscaler + prometheus-adapter)",
        a.autoscaler);
  }
  if (t == "alibaba-pai-eas" && (!a.autoscaler.empty() || !a.prometheus_url.empty())) {
    return InvalidArgument(
        "--autoscaler / --prometheus-url on --target alibaba-pai-eas: EAS scales the service itself (the "
        "service JSON's autoscaler); drop them");
  }
  if (t == "alibaba-pai-eas" && ctx.plan.layout.nodes > 1) {
    return InvalidArgument(
        "--autoscale on --target alibaba-pai-eas: a service of {} instances per replica is a distributed "
        "unit, and how EAS's autoscaler adds or removes whole units is not documented in the sources k3 "
        "follows: drop --autoscale (set --replicas), or use a Kubernetes target (LeaderWorkerSet groups "
        "scale as groups)",
        ctx.plan.layout.nodes);
  }
  if (ctx.plan.replicas < a.min || ctx.plan.replicas > a.max) {
    return InvalidArgument(
        "--replicas {} (the groups that start) is outside --autoscale {}: pass --replicas {}",
        ctx.plan.replicas, range, std::max(a.min, 1));
  }
  if (a.min == 0) {
    if (IsKubernetes(t)) {
      return InvalidArgument(
          "--autoscale {}: at zero replicas no serving pod exports vllm:num_requests_waiting, so nothing "
          "could scale it back up (a request to the Service fails instead of queueing): use --autoscale 1:{}",
          range, a.max);
    }
    const int cold = ColdStartSeconds(ctx);
    const std::string load =
        fmt::format("a cold start loads {:.0f} GB in {} ({} s) at the planned bandwidth",
                    ctx.model.weight_bytes / 1e9, FormatDuration(ctx.plan.probes.load_seconds), cold);
    if (a.max_cold_start_seconds < 0) {
      return InvalidArgument(
          "--autoscale {} scales to zero, and {}: pass --max-cold-start {} (or more) to accept that wait on "
          "the "
          "first request after idle, or keep one group warm with --autoscale 1:{}",
          range, load, cold, a.max);
    }
    if (cold > a.max_cold_start_seconds) {
      return InvalidArgument(
          "--autoscale {}: {}, above --max-cold-start {}: keep one group warm with --autoscale 1:{}, or plan "
          "a "
          "faster --weights-bandwidth, or accept it with --max-cold-start {}",
          range, load, a.max_cold_start_seconds, a.max, cold);
    }
  }
  return OkStatus();
}

std::vector<RenderedFile> OpsFiles(const RenderContext& ctx) {
  std::vector<RenderedFile> files;
  if (!WritesScrapeObjects(ctx)) return files;
  files.push_back(MonitoringFile(ctx));
  if (ctx.options.monitoring) files.push_back(DashboardFile(ctx));
  if (!ctx.options.autoscale.enabled) return files;
  const std::string what =
      ctx.plan.layout.nodes > 1
          ? fmt::format("LeaderWorkerSet groups of {} nodes (its scale subresource)", ctx.plan.layout.nodes)
          : std::string("Deployment replicas");
  std::vector<std::string> header = {
      fmt::format("--autoscale {}: {} of {} on the vLLM queue and KV-cache metrics",
                  RangeText(ctx.options.autoscale), what, ctx.app_name),
      fmt::format("cold start (weight load at the planned bandwidth): {}",
                  FormatDuration(ctx.plan.probes.load_seconds))};
  if (Autoscaler(ctx) == "keda") {
    header.push_back(std::string("needs KEDA ") + kKedaVersion + " (NOTES.md installs it)");
    files.push_back({"autoscale.yaml", YamlFile(header, {ScaledObject(ctx)})});
  } else {
    header.push_back("needs prometheus-adapter with prometheus-adapter-values.yaml (NOTES.md installs it)");
    files.push_back({"autoscale.yaml", YamlFile(header, {HorizontalPodAutoscaler(ctx)})});
    files.push_back({"prometheus-adapter-values.yaml", AdapterValues(ctx)});
  }
  return files;
}

std::string OpsNotes(const RenderContext& ctx) {
  const AutoscaleOptions& a = ctx.options.autoscale;
  std::string s;
  if (a.enabled) {
    const std::string cold = FormatDuration(ctx.plan.probes.load_seconds);
    if (ctx.plan.target.id == "alibaba-pai-eas") {
      s += fmt::format(
          "- Autoscaling {}: EAS adds or removes instances on its per-instance QPS (service.json "
          "`autoscaler`); "
          "each new instance is a cold start of {} (the weight load at the planned bandwidth; its startup "
          "check allows {})\n",
          RangeText(a), cold, FormatDuration(ctx.plan.probes.startup_budget_seconds));
      if (a.min == 0) {
        s += fmt::format(
            "- Scale to zero: after {} s without traffic EAS stops the last instance; the first request "
            "after "
            "that waits a cold start of {} (accepted by --max-cold-start {})\n",
            PaiEasZeroGraceSeconds(ctx), cold, a.max_cold_start_seconds);
      }
    } else {
      s += fmt::format(
          "- Autoscaling {} with {}: {} of {} between {} and {} on sum(vllm:num_requests_waiting) / groups > "
          "{} "
          "or mean vllm:kv_cache_usage_perc > {} ({} queries {}); a new group is a cold start of {} (the "
          "weight load at the planned bandwidth; its startup probe allows {}), so groups are added one per "
          "{} s and kept {} s after the load falls\n",
          RangeText(a), Autoscaler(ctx) == "keda" ? "a KEDA ScaledObject" : "a HorizontalPodAutoscaler",
          ctx.plan.layout.nodes > 1 ? "LeaderWorkerSet groups" : "replicas", ctx.app_name, a.min, a.max,
          kTargetWaitingPerGroup, kTargetKvCacheUsage,
          Autoscaler(ctx) == "keda" ? "KEDA" : "prometheus-adapter", PrometheusQueryUrl(ctx), cold,
          FormatDuration(ctx.plan.probes.startup_budget_seconds),
          std::clamp(ColdStartSeconds(ctx), 60, kMaxPolicyPeriodSeconds),
          std::clamp(ColdStartSeconds(ctx), 300, kMaxStabilizationSeconds));
      s += fmt::format(
          "- Nodes: the node pool holds {} node(s) ({} group(s) x {}); groups beyond it stay Pending until "
          "the "
          "pool grows (its cluster autoscaler, or more capacity) to {} node(s)\n",
          ctx.plan.layout.nodes * ctx.plan.replicas, ctx.plan.replicas, ctx.plan.layout.nodes,
          ctx.plan.layout.nodes * a.max);
    }
  }
  if (WritesScrapeObjects(ctx)) {
    s += UsesGmp(ctx)
             ? "- Metrics: Google Cloud Managed Service for Prometheus scrapes the serving pods' /metrics "
               "(monitoring.yaml: PodMonitoring)"
             : "- Metrics: the Prometheus Operator of kube-prometheus-stack scrapes the serving pods' "
               "/metrics "
               "(monitoring.yaml: PodMonitor)";
    s += ctx.options.monitoring ? "; grafana-dashboard.json charts TTFT, ITL, queue, KV cache, prefix-cache "
                                  "hits and tokens/s for either engine\n"
                                : "\n";
  }
  return s;
}

std::vector<std::string> OpsApplyCommands(const RenderContext& ctx) {
  std::vector<std::string> c;
  if (!WritesScrapeObjects(ctx)) return c;
  const std::string ns = KubectlNamespace(ctx);
  for (const std::string& line : MetricsStackCommands(ctx)) c.push_back(line);
  c.push_back("kubectl apply -f monitoring.yaml");
  if (ctx.options.monitoring) {
    for (const std::string& line : DashboardCommands(ctx)) c.push_back(line);
  }
  if (!ctx.options.autoscale.enabled) return c;
  if (Autoscaler(ctx) == "keda") {
    c.push_back("helm repo add kedacore https://kedacore.github.io/charts");
    c.push_back(std::string("helm upgrade --install keda kedacore/keda --namespace keda --create-namespace "
                            "--version ") +
                kKedaVersion);
  } else {
    c.push_back("helm repo add prometheus-community https://prometheus-community.github.io/helm-charts");
    c.push_back(
        "helm upgrade --install prometheus-adapter prometheus-community/prometheus-adapter --namespace "
        "monitoring --create-namespace -f prometheus-adapter-values.yaml");
  }
  c.push_back("kubectl apply -f autoscale.yaml");
  c.push_back("kubectl get " + std::string(Autoscaler(ctx) == "keda" ? "scaledobject" : "hpa") + ns + " " +
              ctx.app_name);
  return c;
}

std::string OpsCleanup(const RenderContext& ctx) {
  std::string s;
  if (!WritesScrapeObjects(ctx)) return s;
  if (ctx.options.autoscale.enabled) {
    s += "run \"autoscale.yaml objects (the autoscaler first: it would scale the workload back)\" kubectl "
         "delete -f autoscale.yaml --ignore-not-found\n";
  }
  s += MonitoringCleanup(ctx);
  return s;
}

int PaiEasZeroGraceSeconds(const RenderContext& ctx) { return std::max(600, ColdStartSeconds(ctx)); }

Doc PaiEasAutoscaler(const RenderContext& ctx) {
  const AutoscaleOptions& a = ctx.options.autoscale;
  if (!a.enabled) {
    return Doc{{"min", ctx.plan.replicas},
               {"max", ctx.plan.replicas + 1},
               {"scaleStrategies", Doc::array({Doc{{"metricName", "qps"}, {"threshold", 2}}})}};
  }
  const int cold = ColdStartSeconds(ctx);
  Doc behavior = {
      {"scaleUp", {{"stabilizationWindowSeconds", 0}}},
      {"scaleDown", {{"stabilizationWindowSeconds", std::clamp(cold, 300, kMaxStabilizationSeconds)}}}};
  if (a.min == 0) {
    behavior["onZero"] = {{"scaleDownGracePeriodSeconds", PaiEasZeroGraceSeconds(ctx)},
                          {"scaleUpActivationReplicas", 1}};
  }
  return Doc{{"min", a.min},
             {"max", a.max},
             {"scaleStrategies", Doc::array({Doc{{"metricName", "qps"}, {"threshold", 2}}})},
             {"behavior", behavior}};
}

}  // namespace k3::deploy
