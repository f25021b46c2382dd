// Between the two halves of the operations add-ons (render_ops.h): render_autoscale.cc (autoscalers, NOTES,
// apply and cleanup lines) and render_monitoring.cc (scrape objects, GMP query frontend, dashboard).
#pragma once

#include <string>
#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

// kube-prometheus-stack's Prometheus Service (Helm release "kube-prometheus-stack" in "monitoring").
inline constexpr const char* kPrometheusService = "kube-prometheus-stack-prometheus";
inline constexpr const char* kPrometheusRelease = "kube-prometheus-stack";

// The namespace the serving pods run in ("default" without --namespace) and the PromQL label matchers
// of their series: namespace="NS",model_name="SERVED NAME" (both engines label by model_name).
std::string MetricNamespace(const RenderContext& ctx);
std::string MetricSelector(const RenderContext& ctx);

// gcp-gke: Google Cloud Managed Service for Prometheus (PodMonitoring; queries through its frontend).
bool UsesGmp(const RenderContext& ctx);
std::string GmpFrontendName(const RenderContext& ctx);  // "kimi-k3-gmp-frontend"

// A Kubernetes target with --monitoring or --autoscale: monitoring.yaml is written.
bool WritesScrapeObjects(const RenderContext& ctx);

RenderedFile MonitoringFile(const RenderContext& ctx);  // monitoring.yaml
RenderedFile DashboardFile(const RenderContext& ctx);   // grafana-dashboard.json

// Apply lines: the metrics stack (before monitoring.yaml), the dashboard's ConfigMap.
std::vector<std::string> MetricsStackCommands(const RenderContext& ctx);
std::vector<std::string> DashboardCommands(const RenderContext& ctx);
// cleanup.sh `run` lines of monitoring.yaml and what the apply lines created.
std::string MonitoringCleanup(const RenderContext& ctx);

// PAI-EAS: idle seconds before the last instance stops (scale to zero): one cold start, at least EAS's
// default 600.
int PaiEasZeroGraceSeconds(const RenderContext& ctx);

}  // namespace k3::deploy
