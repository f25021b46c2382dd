// --monitoring (render_ops.h): the scrape object of each Kubernetes target's metrics stack, the GMP query
// frontend an autoscaler reads on GKE, the Grafana dashboard of vLLM metric names, and their apply and
// cleanup lines. Only the pods that serve HTTP are scraped: a Deployment's pods, or LeaderWorkerSet leaders
// (workers run headless ranks / Ray workers and export nothing).
#include "src/deploy/render_identity.h"
#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_ops.h"
#include "src/deploy/render_ops_internal.h"
#include "src/deploy/render_workload.h"

namespace k3::deploy {
namespace {

// GMP's query frontend (examples/frontend.yaml of GoogleCloudPlatform/prometheus-engine v0.17.2).
constexpr const char* kGmpFrontendImage = "gke.gcr.io/prometheus-engine/frontend:v0.15.3-gke.0";
constexpr const char* kScrapeInterval = "15s";

Doc ServingPodSelector(const RenderContext& ctx) {
  if (ctx.plan.layout.nodes > 1) {
    return Doc{{"leaderworkerset.sigs.k8s.io/name", WorkloadName(ctx)}, {"role", "leader"}};
  }
  return Doc{{"app.kubernetes.io/name", ctx.app_name}, {"app.kubernetes.io/component", "serving"}};
}

// Prometheus Operator PodMonitor; kube-prometheus-stack's Prometheus selects monitors by the release label.
Doc PodMonitor(const RenderContext& ctx) {
  Doc meta = ObjectMeta(ctx, ctx.app_name + "-metrics", "monitoring");
  meta["labels"]["release"] = kPrometheusRelease;
  return Doc{
      {"apiVersion", "monitoring.coreos.com/v1"},
      {"kind", "PodMonitor"},
      {"metadata", meta},
      {"spec",
       {{"selector", {{"matchLabels", ServingPodSelector(ctx)}}},
        {"podMetricsEndpoints",
         Doc::array(
             {Doc{{"portNumber", ctx.serve.port}, {"path", "/metrics"}, {"interval", kScrapeInterval}}})}}}};
}

Doc PodMonitoring(const RenderContext& ctx) {
  return Doc{
      {"apiVersion", "monitoring.googleapis.com/v1"},
      {"kind", "PodMonitoring"},
      {"metadata", ObjectMeta(ctx, ctx.app_name + "-metrics", "monitoring")},
      {"spec",
       {{"selector", {{"matchLabels", ServingPodSelector(ctx)}}},
        {"endpoints",
         Doc::array({Doc{{"port", ctx.serve.port}, {"path", "/metrics"}, {"interval", kScrapeInterval}}})}}}};
}

std::string GcpProjectConfigMap(const RenderContext& ctx) { return ctx.app_name + "-gcp-project"; }

bool WritesGmpFrontend(const RenderContext& ctx) {
  return UsesGmp(ctx) && ctx.options.autoscale.enabled && ctx.options.autoscale.prometheus_url.empty();
}

// The Prometheus-compatible query API over Cloud Monitoring that KEDA / prometheus-adapter read on GKE.
std::vector<Doc> GmpFrontend(const RenderContext& ctx) {
  const std::string name = GmpFrontendName(ctx);
  Doc labels = StandardLabels(ctx, "metrics-frontend");
  Doc selector = {{"app.kubernetes.io/name", ctx.app_name},
                  {"app.kubernetes.io/component", "metrics-frontend"}};
  Doc sa = {{"apiVersion", "v1"},
            {"kind", "ServiceAccount"},
            {"metadata", ObjectMeta(ctx, name, "metrics-frontend")}};
  Doc container = {
      {"name", "frontend"},
      {"image", kGmpFrontendImage},
      {"args", Doc::array({"--web.listen-address=:9090", "--query.project-id=$(PROJECT_ID)"})},
      {"env", Doc::array({Doc{
                  {"name", "PROJECT_ID"},
                  {"valueFrom",
                   {{"configMapKeyRef", {{"name", GcpProjectConfigMap(ctx)}, {"key", "PROJECT_ID"}}}}}}})},
      {"ports", Doc::array({Doc{{"name", "web"}, {"containerPort", 9090}}})},
      {"readinessProbe", {{"httpGet", {{"path", "/-/ready"}, {"port", "web"}}}}},
      {"livenessProbe", {{"httpGet", {{"path", "/-/healthy"}, {"port", "web"}}}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"capabilities", {{"drop", Doc::array({"ALL"})}}},
        {"privileged", false},
        {"runAsGroup", 1000},
        {"runAsNonRoot", true},
        {"runAsUser", 1000}}}};
  Doc pod = {{"serviceAccountName", name},
             {"nodeSelector", {{"kubernetes.io/os", "linux"}}},
             {"containers", Doc::array({container})}};
  Doc deployment = {{"apiVersion", "apps/v1"},
                    {"kind", "Deployment"},
                    {"metadata", ObjectMeta(ctx, name, "metrics-frontend")},
                    {"spec",
                     {{"replicas", 2},
                      {"selector", {{"matchLabels", selector}}},
                      {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod}}}}}};
  Doc service = {{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", ObjectMeta(ctx, name, "metrics-frontend")},
                 {"spec",
                  {{"clusterIP", "None"},
                   {"selector", selector},
                   {"ports", Doc::array({Doc{{"name", "web"}, {"port", 9090}, {"targetPort", "web"}}})}}}};
  return {sa, deployment, service};
}

// The frontend's principal under Workload Identity Federation (clusters with a workload pool).
std::string FrontendPrincipal(const RenderContext& ctx) {
  return "principal://iam.googleapis.com/projects/$PROJECT_NUMBER/locations/global/workloadIdentityPools/"
         "$PROJECT_ID.svc.id.goog/subject/ns/" +
         MetricNamespace(ctx) + "/sa/" + GmpFrontendName(ctx);
}

std::string DashboardConfigMap(const RenderContext& ctx) { return ctx.app_name + "-grafana-dashboard"; }

// One time-series panel of the dashboard.
Doc Panel(int id, const std::string& title, const std::string& unit, int x, int y,
          const std::vector<std::pair<std::string, std::string>>& queries) {
  Doc targets = Doc::array();
  char ref = 'A';
  for (const auto& [expr, legend] : queries) {
    targets.push_back(Doc{{"refId", std::string(1, ref++)},
                          {"datasource", {{"type", "prometheus"}, {"uid", "${datasource}"}}},
                          {"expr", expr},
                          {"legendFormat", legend}});
  }
  return Doc{{"id", id},
             {"type", "timeseries"},
             {"title", title},
             {"datasource", {{"type", "prometheus"}, {"uid", "${datasource}"}}},
             {"gridPos", {{"h", 8}, {"w", 12}, {"x", x}, {"y", y}}},
             {"fieldConfig", {{"defaults", {{"unit", unit}}}, {"overrides", Doc::array()}}},
             {"targets", targets}};
}

}  // namespace

std::string GmpFrontendName(const RenderContext& ctx) { return ctx.app_name + "-gmp-frontend"; }

Doc GrafanaDashboard(const RenderContext& ctx) {
  const std::string sel = "namespace=\"$namespace\",model_name=\"$model_name\"";
  auto quantile = [&](const std::string& q, const std::string& histogram) {
    return "histogram_quantile(" + q + ", sum by (le) (rate(" + histogram + "_bucket{" + sel + "}[5m])))";
  };
  Doc panels =
      Doc::array({Panel(1, "Time to first token", "s", 0, 0,
                        {{quantile("0.5", "vllm:time_to_first_token_seconds"), "p50"},
                         {quantile("0.99", "vllm:time_to_first_token_seconds"), "p99"}}),
                  Panel(2, "Inter-token latency", "s", 12, 0,
                        {{quantile("0.5", "vllm:inter_token_latency_seconds"), "p50"},
                         {quantile("0.99", "vllm:inter_token_latency_seconds"), "p99"}}),
                  Panel(3, "Requests waiting and running", "short", 0, 8,
                        {{"sum(vllm:num_requests_waiting{" + sel + "})", "waiting"},
                         {"sum(vllm:num_requests_running{" + sel + "})", "running"}}),
                  Panel(4, "KV-cache usage", "percentunit", 12, 8,
                        {{"vllm:kv_cache_usage_perc{" + sel + "}", "{{pod}}"}}),
                  Panel(5, "Prefix-cache hit rate", "percentunit", 0, 16,
                        {{"sum(rate(vllm:prefix_cache_hits_total{" + sel +
                              "}[5m])) / sum(rate(vllm:prefix_cache_queries_total{" + sel + "}[5m]))",
                          "hit rate"}}),
                  Panel(6, "Tokens per second", "short", 12, 16,
                        {{"sum(rate(vllm:prompt_tokens_total{" + sel + "}[1m]))", "prompt"},
                         {"sum(rate(vllm:generation_tokens_total{" + sel + "}[1m]))", "generation"}}),
                  Panel(7, "End-to-end request latency", "s", 0, 24,
                        {{quantile("0.5", "vllm:e2e_request_latency_seconds"), "p50"},
                         {quantile("0.99", "vllm:e2e_request_latency_seconds"), "p99"}}),
                  Panel(8, "Finished requests and preemptions per second", "reqps", 12, 24,
                        {{"sum by (finished_reason) (rate(vllm:request_success_total{" + sel + "}[5m]))",
                          "{{finished_reason}}"},
                         {"sum(rate(vllm:num_preemptions_total{" + sel + "}[5m]))", "preemptions"}})});
  auto constant = [](const std::string& name, const std::string& value) {
    return Doc{{"name", name},
               {"type", "custom"},
               {"query", value},
               {"current", {{"text", value}, {"value", value}}},
               {"options", Doc::array({Doc{{"text", value}, {"value", value}, {"selected", true}}})}};
  };
  Doc templating = Doc::array(
      {Doc{{"name", "datasource"}, {"type", "datasource"}, {"query", "prometheus"}, {"label", "Prometheus"}},
       constant("namespace", MetricNamespace(ctx)), constant("model_name", ctx.model.served_name)});
  return Doc{{"title", ctx.model.served_name + " serving (vLLM metrics, vLLM or k3)"},
             {"uid", ctx.app_name + "-serving"},
             {"tags", Doc::array({"k3", "vllm", ctx.app_name})},
             {"timezone", "browser"},
             {"editable", true},
             {"schemaVersion", 39},
             {"version", 1},
             {"refresh", "30s"},
             {"time", {{"from", "now-6h"}, {"to", "now"}}},
             {"templating", {{"list", templating}}},
             {"panels", panels}};
}

RenderedFile MonitoringFile(const RenderContext& ctx) {
  std::vector<Doc> docs = {UsesGmp(ctx) ? PodMonitoring(ctx) : PodMonitor(ctx)};
  if (WritesGmpFrontend(ctx)) {
    for (Doc& d : GmpFrontend(ctx)) docs.push_back(std::move(d));
  }
  const std::string scraper =
      UsesGmp(ctx)
          ? "Google Cloud Managed Service for Prometheus (PodMonitoring, monitoring.googleapis.com/v1)"
          : "the Prometheus Operator of kube-prometheus-stack (PodMonitor, monitoring.coreos.com/v1)";
  std::vector<std::string> header = {"Scrape of the serving pods' /metrics (vLLM names, either engine) by " +
                                     scraper};
  if (WritesGmpFrontend(ctx)) {
    header.push_back("and GMP's query frontend (" + GmpFrontendName(ctx) +
                     ":9090), the Prometheus API the autoscaler reads");
  }
  return {"monitoring.yaml", YamlFile(header, docs)};
}

RenderedFile DashboardFile(const RenderContext& ctx) {
  return {"grafana-dashboard.json", GrafanaDashboard(ctx).dump(2) + "\n"};
}

std::vector<std::string> MetricsStackCommands(const RenderContext& ctx) {
  std::vector<std::string> c;
  if (UsesGmp(ctx)) {
    // Managed collection is on by default in clusters created at GKE 1.27+; this turns it on elsewhere.
    c.push_back("gcloud container clusters update \"${CLUSTER_NAME:-gke-" + ctx.app_name +
                "}\" --enable-managed-prometheus --project=\"$PROJECT_ID\" --location=\"$REGION\"");
    if (WritesGmpFrontend(ctx)) {
      c.push_back("kubectl create configmap " + GcpProjectConfigMap(ctx) + " --namespace " +
                  MetricNamespace(ctx) + " --from-literal=PROJECT_ID=\"$PROJECT_ID\"");
      if (UsesWorkloadIdentity(ctx)) {
        // A workload-pool cluster: the frontend reads Cloud Monitoring as its own Kubernetes identity.
        c.push_back(
            "PROJECT_NUMBER=$(gcloud projects describe \"$PROJECT_ID\" --format='value(projectNumber)')");
        c.push_back(
            "gcloud projects add-iam-policy-binding \"$PROJECT_ID\" --role=roles/monitoring.viewer "
            "--member=\"" +
            FrontendPrincipal(ctx) + "\"");
      }
    }
    return c;
  }
  if (!ctx.options.autoscale.prometheus_url.empty()) return c;  // the user's Prometheus
  c.push_back("helm repo add prometheus-community https://prometheus-community.github.io/helm-charts");
  c.push_back(std::string("helm upgrade --install ") + kPrometheusRelease +
              " prometheus-community/kube-prometheus-stack --namespace monitoring --create-namespace");
  return c;
}

std::vector<std::string> DashboardCommands(const RenderContext& ctx) {
  if (UsesGmp(ctx)) {
    return {
        "# grafana-dashboard.json: import it into Grafana (Dashboards > New > Import) with a Prometheus data "
        "source on GMP's query frontend"};
  }
  // kube-prometheus-stack's Grafana loads ConfigMaps labelled grafana_dashboard=1 in its namespace.
  const std::string cm = DashboardConfigMap(ctx);
  return {"kubectl create configmap " + cm + " --namespace monitoring --from-file=grafana-dashboard.json",
          "kubectl label configmap " + cm + " --namespace monitoring grafana_dashboard=1"};
}

std::string MonitoringCleanup(const RenderContext& ctx) {
  std::string s = "run \"monitoring.yaml objects\" kubectl delete -f monitoring.yaml --ignore-not-found\n";
  if (ctx.options.monitoring && !UsesGmp(ctx)) {
    s += "run \"ConfigMap " + DashboardConfigMap(ctx) + "\" kubectl delete configmap " +
         DashboardConfigMap(ctx) + " --namespace monitoring --ignore-not-found\n";
  }
  if (WritesGmpFrontend(ctx)) {
    s += "run \"ConfigMap " + GcpProjectConfigMap(ctx) + "\" kubectl delete configmap " +
         GcpProjectConfigMap(ctx) + " --namespace " + MetricNamespace(ctx) + " --ignore-not-found\n";
    if (UsesWorkloadIdentity(ctx)) {
      s += "PROJECT_NUMBER=$(gcloud projects describe \"$PROJECT_ID\" --format='value(projectNumber)')\n"
           "run \"IAM binding of " +
           GmpFrontendName(ctx) +
           "\" gcloud projects remove-iam-policy-binding \"$PROJECT_ID\" --role=roles/monitoring.viewer "
           "--member=\"" +
           FrontendPrincipal(ctx) + "\"\n";
    }
  }
  return s;
}

}  // namespace k3::deploy
