// Operations add-ons of `k3 render`: --autoscale MIN:MAX (queue-driven replica counts) and --monitoring
// (the platform's scrape object and a Grafana dashboard). Both read the vLLM metric names that vLLM and
// `k3 serve` export (src/server/serving_metrics.cc), so either engine scales and is charted alike.
//
// Kubernetes targets (aws-eks, azure-aks, gcp-gke, k8s):
//   monitoring.yaml   the scrape object of the target's metrics stack (written with --autoscale too, since
//                     the autoscaler queries what it scrapes): GKE Managed Service for Prometheus
//                     PodMonitoring (+ its query frontend when an autoscaler reads it), elsewhere a
//                     Prometheus Operator PodMonitor for kube-prometheus-stack
//   autoscale.yaml    KEDA ScaledObject (prometheus triggers; --autoscaler keda, the default) or an
//                     autoscaling/v2 HorizontalPodAutoscaler on Pods metrics served by prometheus-adapter
//                     (--autoscaler hpa, with prometheus-adapter-values.yaml); the target is the Deployment,
//                     or the LeaderWorkerSet (its scale subresource counts groups; leaders export metrics)
//   grafana-dashboard.json  (--monitoring) TTFT, ITL, e2e latency, queue, KV-cache usage, prefix-cache hit
//                     rate, tokens/s, finished requests, preemptions
// alibaba-pai-eas: the service JSON's `autoscaler` body (min, max, scaleStrategies, behavior incl. onZero).
// Cold start = the weight load time of the plan (ProbeBudget::load_seconds); NOTES.md states it, and MIN 0
// is refused unless --max-cold-start accepts it.
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/deploy/render.h"

namespace k3::deploy {

// "MIN:MAX" -> options (enabled, min, max). Errors name --autoscale and the form.
Status ParseAutoscaleRange(const std::string& text, AutoscaleOptions& out);

// Refuses what cannot run as rendered: a target without an autoscaler / scrape path k3 renders, MIN 0
// where nothing measures demand at zero replicas or the cold start exceeds --max-cold-start, an unknown
// --autoscaler, --replicas outside MIN..MAX, companions without --autoscale.
Status CheckOps(const RenderContext& ctx);

// The files of --autoscale / --monitoring on the Kubernetes targets (none elsewhere / without the flags).
std::vector<RenderedFile> OpsFiles(const RenderContext& ctx);

// NOTES.md: lines of the plan section (cold start, what scales on what) and apply steps (after the
// target's own steps: metrics stack, autoscaler, objects).
std::string OpsNotes(const RenderContext& ctx);
std::vector<std::string> OpsApplyCommands(const RenderContext& ctx);

// cleanup.sh `run` lines, first (the autoscaler would otherwise scale the workload back up).
std::string OpsCleanup(const RenderContext& ctx);

// PAI-EAS service JSON `autoscaler`: from --autoscale, else the fixed default (min = replicas).
Doc PaiEasAutoscaler(const RenderContext& ctx);

// Where the autoscaler queries the metrics: --prometheus-url, else the target's stack (GMP frontend in
// the namespace on gcp-gke, kube-prometheus-stack's Prometheus elsewhere).
std::string PrometheusQueryUrl(const RenderContext& ctx);

// The PromQL of the Grafana dashboard's panels (tests check each metric name against /metrics).
Doc GrafanaDashboard(const RenderContext& ctx);

// Queue and cache targets the autoscaler keeps per serving group.
inline constexpr int kTargetWaitingPerGroup = 2;    // vllm:num_requests_waiting (sum / groups)
inline constexpr double kTargetKvCacheUsage = 0.8;  // vllm:kv_cache_usage_perc (mean over leaders)

}  // namespace k3::deploy
