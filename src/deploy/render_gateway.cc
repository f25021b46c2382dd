// Inference Gateway objects and install steps (see render_gateway.h). Object shapes follow the GAIE
// inferencepool Helm chart (epp Deployment, Service, RBAC, plugins ConfigMap) at kGaieVersion.
#include "src/deploy/render_gateway.h"

#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_workload.h"

namespace k3::deploy {
namespace {

constexpr int kPickerGrpcPort = 9002;
constexpr int kPickerHealthPort = 9003;
constexpr int kPickerMetricsPort = 9090;
constexpr int kGkeBackendTimeoutSeconds = 3600;  // a 1M-token request may generate for many minutes

std::string PickerName(const RenderContext& ctx) { return ctx.app_name + "-epp"; }

Doc PoolSelector(const RenderContext& ctx) {
  if (ctx.plan.layout.nodes == 1) {
    return {{"app.kubernetes.io/name", ctx.app_name}, {"app.kubernetes.io/component", "serving"}};
  }
  return {{"leaderworkerset.sigs.k8s.io/name", WorkloadName(ctx)}, {"role", "leader"}};
}

Doc PickerLabels() { return {{"app", "endpoint-picker"}}; }

// Scheduling plugins: queue depth, KV-cache use and prefix-cache affinity from the vllm:* metrics.
const char* kPluginsConfig =
    "apiVersion: inference.networking.x-k8s.io/v1alpha1\n"
    "kind: EndpointPickerConfig\n"
    "plugins:\n"
    "- type: queue-scorer\n"
    "- type: kv-cache-utilization-scorer\n"
    "- type: prefix-cache-scorer\n"
    "- type: max-score-picker\n"
    "- type: single-profile-handler\n"
    "schedulingProfiles:\n"
    "- name: default\n"
    "  plugins:\n"
    "  - pluginRef: queue-scorer\n"
    "  - pluginRef: kv-cache-utilization-scorer\n"
    "  - pluginRef: prefix-cache-scorer\n"
    "  - pluginRef: max-score-picker\n";

std::vector<Doc> PickerObjects(const RenderContext& ctx) {
  const std::string name = PickerName(ctx);
  Doc sa = {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", ObjectMeta(ctx, name, "gateway")}};
  Doc role = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "Role"},
      {"metadata", ObjectMeta(ctx, name, "gateway")},
      // The picker's reconcilers watch every GAIE kind the installed CRD bundle defines: at v1.5.0
      // InferenceObjective and InferenceModelRewrite (the upstream chart grants both).
      {"rules", Doc::array({Doc{{"apiGroups", Doc::array({"inference.networking.x-k8s.io"})},
                                {"resources", Doc::array({"inferenceobjectives", "inferencemodelrewrites"})},
                                {"verbs", Doc::array({"get", "watch", "list"})}},
                            Doc{{"apiGroups", Doc::array({"inference.networking.k8s.io"})},
                                {"resources", Doc::array({"inferencepools"})},
                                {"verbs", Doc::array({"get", "watch", "list"})}},
                            Doc{{"apiGroups", Doc::array({""})},
                                {"resources", Doc::array({"pods"})},
                                {"verbs", Doc::array({"get", "watch", "list"})}}})}};
  Doc binding = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", "RoleBinding"},
                 {"metadata", ObjectMeta(ctx, name, "gateway")},
                 {"subjects", Doc::array({Doc{{"kind", "ServiceAccount"}, {"name", name}}})},
                 {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", name}}}};
  Doc config = {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", ObjectMeta(ctx, name, "gateway")},
                {"data", {{"plugins.yaml", kPluginsConfig}}}};
  const std::string ns = ctx.options.name_space.empty() ? "default" : ctx.options.name_space;
  auto grpc_probe = [](const char* service) {
    return Doc{{"grpc", {{"port", kPickerHealthPort}, {"service", service}}},
               {"initialDelaySeconds", 5},
               {"periodSeconds", 10}};
  };
  Doc container = {
      {"name", "epp"},
      {"image", std::string("registry.k8s.io/gateway-api-inference-extension/epp:") + kGaieVersion},
      {"args", Doc::array({"--pool-name", ctx.app_name, "--pool-namespace", ns, "--config-file",
                           "/config/plugins.yaml", "--grpc-port", std::to_string(kPickerGrpcPort),
                           "--grpc-health-port", std::to_string(kPickerHealthPort), "--metrics-port",
                           std::to_string(kPickerMetricsPort)})},
      {"ports", Doc::array({Doc{{"name", "grpc"}, {"containerPort", kPickerGrpcPort}},
                            Doc{{"name", "grpc-health"}, {"containerPort", kPickerHealthPort}},
                            Doc{{"name", "metrics"}, {"containerPort", kPickerMetricsPort}}})},
      {"livenessProbe", grpc_probe("inference-extension")},
      {"readinessProbe", grpc_probe("inference-extension")},
      {"volumeMounts", Doc::array({Doc{{"name", "plugins-config"}, {"mountPath", "/config"}}})}};
  Doc labels = StandardLabels(ctx, "gateway");
  labels.update(PickerLabels());
  Doc deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", ObjectMeta(ctx, name, "gateway")},
      {"spec",
       {{"replicas", 1},
        {"selector", {{"matchLabels", PickerLabels()}}},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"serviceAccountName", name},
            {"terminationGracePeriodSeconds", 130},
            {"containers", Doc::array({container})},
            {"volumes",
             Doc::array({Doc{{"name", "plugins-config"}, {"configMap", {{"name", name}}}}})}}}}}}}};
  Doc service = {{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", ObjectMeta(ctx, name, "gateway")},
                 {"spec",
                  {{"selector", PickerLabels()},
                   {"ports", Doc::array({Doc{{"name", "grpc-ext-proc"},
                                             {"port", kPickerGrpcPort},
                                             {"protocol", "TCP"},
                                             {"appProtocol", "http2"}}})},
                   {"type", "ClusterIP"}}}};
  return {sa, role, binding, config, deployment, service};
}

}  // namespace

Result<std::string> GatewayImplementation(const RenderContext& ctx) {
  const std::string& impl = ctx.options.gateway_impl;
  if (ctx.plan.target.id == "gcp-gke") {
    if (!impl.empty() && impl != "gke") {
      return InvalidArgument("--gateway-impl {}: gcp-gke uses GKE's managed gateway (gke)", impl);
    }
    return std::string("gke");
  }
  if (impl.empty()) return std::string("kgateway");
  if (impl != "kgateway" && impl != "istio") {
    return InvalidArgument("--gateway-impl '{}': one of kgateway, istio on --target {} (gke only on gcp-gke)",
                           impl, ctx.plan.target.id);
  }
  return impl;
}

std::string GatewayClassName(const std::string& implementation) {
  if (implementation == "gke") return "gke-l7-regional-external-managed";
  return implementation;  // kgateway and istio install a GatewayClass of their own name
}

std::vector<Doc> GatewayObjects(const RenderContext& ctx) {
  const Result<std::string> chosen = GatewayImplementation(ctx);  // Render checked it
  const std::string impl = chosen.ok() ? *chosen : "kgateway";
  std::vector<Doc> docs = PickerObjects(ctx);
  docs.push_back(
      {{"apiVersion", "inference.networking.k8s.io/v1"},
       {"kind", "InferencePool"},
       {"metadata", ObjectMeta(ctx, ctx.app_name, "gateway")},
       {"spec",
        {{"selector", {{"matchLabels", PoolSelector(ctx)}}},
         {"targetPorts", Doc::array({Doc{{"number", ctx.serve.port}}})},
         {"endpointPickerRef", {{"name", PickerName(ctx)}, {"port", {{"number", kPickerGrpcPort}}}}}}}});
  if (impl == "gke") {
    // GKE's load balancer health-checks each backend and times requests out after 30 s by default: probe
    // the serving port's /health, and allow long generations (the GAIE chart's GKE objects).
    const Doc pool_ref = {
        {"group", "inference.networking.k8s.io"}, {"kind", "InferencePool"}, {"name", ctx.app_name}};
    docs.push_back({{"apiVersion", "networking.gke.io/v1"},
                    {"kind", "HealthCheckPolicy"},
                    {"metadata", ObjectMeta(ctx, ctx.app_name, "gateway")},
                    {"spec",
                     {{"targetRef", pool_ref},
                      {"default",
                       {{"config",
                         {{"type", "HTTP"},
                          {"httpHealthCheck", {{"requestPath", "/health"}, {"port", ctx.serve.port}}}}}}}}}});
    docs.push_back(
        {{"apiVersion", "networking.gke.io/v1"},
         {"kind", "GCPBackendPolicy"},
         {"metadata", ObjectMeta(ctx, ctx.app_name, "gateway")},
         {"spec",
          {{"targetRef", pool_ref},
           {"default", {{"timeoutSec", kGkeBackendTimeoutSeconds}, {"logging", {{"enabled", true}}}}}}}});
  }
  docs.push_back(
      {{"apiVersion", "inference.networking.x-k8s.io/v1alpha2"},
       {"kind", "InferenceObjective"},
       {"metadata", ObjectMeta(ctx, ctx.app_name, "gateway")},
       {"spec",
        {{"priority", 0},
         {"poolRef",
          {{"group", "inference.networking.k8s.io"}, {"kind", "InferencePool"}, {"name", ctx.app_name}}}}}});
  docs.push_back(
      {{"apiVersion", "gateway.networking.k8s.io/v1"},
       {"kind", "Gateway"},
       {"metadata", ObjectMeta(ctx, ctx.app_name + "-gateway", "gateway")},
       {"spec",
        {{"gatewayClassName", GatewayClassName(impl)},
         {"listeners", Doc::array({Doc{{"name", "http"}, {"protocol", "HTTP"}, {"port", 80}}})}}}});
  docs.push_back(
      {{"apiVersion", "gateway.networking.k8s.io/v1"},
       {"kind", "HTTPRoute"},
       {"metadata", ObjectMeta(ctx, ctx.app_name + "-route", "gateway")},
       {"spec",
        {{"parentRefs", Doc::array({Doc{{"name", ctx.app_name + "-gateway"}}})},
         {"rules",
          Doc::array({Doc{{"matches", Doc::array({Doc{{"path", {{"type", "PathPrefix"}, {"value", "/"}}}}})},
                          {"backendRefs", Doc::array({Doc{{"group", "inference.networking.k8s.io"},
                                                          {"kind", "InferencePool"},
                                                          {"name", ctx.app_name}}})}}})}}}});
  return docs;
}

std::vector<std::string> GatewayInstallCommands(const RenderContext& ctx) {
  const Result<std::string> chosen = GatewayImplementation(ctx);  // Render checked it
  const std::string impl = chosen.ok() ? *chosen : "kgateway";
  const std::string gaie = std::string(
                               "kubectl apply -f https://github.com/kubernetes-sigs/"
                               "gateway-api-inference-extension/releases/download/") +
                           kGaieVersion + "/manifests.yaml";
  if (impl == "gke") {
    // GKE serves the Gateway API itself (--gateway-api=standard); its regional external managed class
    // needs a proxy-only subnet in the region's network (REGIONAL_MANAGED_PROXY, one per region and VPC).
    return {
        "gcloud compute networks subnets describe k3-proxy-only --project=\"$PROJECT_ID\" "
        "--region=\"$REGION\" >/dev/null 2>&1 ||\n  gcloud compute networks subnets create k3-proxy-only "
        "--project=\"$PROJECT_ID\" --region=\"$REGION\" --network=\"$NETWORK\" "
        "--purpose=REGIONAL_MANAGED_PROXY --role=ACTIVE --range=\"$PROXY_SUBNET_RANGE\"",
        gaie};
  }
  std::vector<std::string> out = {
      "kubectl apply -f https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.3.0/"
      "standard-install.yaml",
      gaie};
  if (impl == "istio") {
    out.push_back(
        "istioctl install -y --set profile=minimal "
        "--set values.pilot.env.ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true");
  } else {
    out.push_back(
        "helm upgrade -i --create-namespace --namespace kgateway-system --version v2.1.1 kgateway-crds "
        "oci://cr.kgateway.dev/kgateway-dev/charts/kgateway-crds");
    out.push_back(
        "helm upgrade -i --namespace kgateway-system --version v2.1.1 kgateway "
        "oci://cr.kgateway.dev/kgateway-dev/charts/kgateway --set inferenceExtension.enabled=true");
  }
  return out;
}

}  // namespace k3::deploy
