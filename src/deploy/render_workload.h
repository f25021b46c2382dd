// The serving workload for Kubernetes targets: a Deployment when one node holds the model, a
// LeaderWorkerSet (leader + workers, one pod per node) when the layout spans nodes, plus the Service.
// Cloud differences come in through a small overlay (node selector, tolerations, storage class).
#pragma once

#include <string>
#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

struct CloudOverlay {
  Doc node_selector = Doc::object();
  Doc tolerations = Doc::array();
  std::string storage_class;  // for the weights PVC ("" = cluster default)
};

// EKS StorageClass for a weights volume shared by several pods (EFS; setup-cluster.sh creates it).
inline constexpr const char* kEksSharedStorageClass = "efs-sc";

CloudOverlay OverlayFor(const RenderContext& ctx);

// The AKS GPU node pool of the plan's instance: its GPU in lowercase + "pool" ("gb300pool", "h200pool";
// AKS pool names are lowercase letters and digits, at most 12).
std::string AksGpuPoolName(const RenderContext& ctx);

// Deployment or LeaderWorkerSet, then the Service. LWS uses the vLLM multi-node (Ray) bootstrap for
// --engine vllm and the LWS environment (SPMD ranks) for --engine k3.
std::vector<Doc> ServingWorkload(const RenderContext& ctx, const CloudOverlay& overlay);

// The name of the workload object ("kimi-k3").
std::string WorkloadName(const RenderContext& ctx);

}  // namespace k3::deploy
