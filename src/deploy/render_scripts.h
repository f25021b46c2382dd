// Cluster scripts for the managed-Kubernetes targets (az / gcloud / aws): create the cluster and the GPU
// node pool (or, for a CPU-only plan, an on-demand CPU node pool)
// (quota and reservation steps as comments), sync the weights to the cloud's object store, and
// clean up everything that keeps billing, reservations included. Text only; nothing is executed.
#pragma once

#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

// setup-cluster.sh, sync-weights.sh and cleanup.sh for azure-aks, gcp-gke and aws-eks (empty otherwise).
std::vector<RenderedFile> ClusterScripts(const RenderContext& ctx, const std::string& manifest_file);

// cleanup.sh around `body` (lines of `run WHAT COMMAND...`): runs from any directory, never stops at a
// failure, ends with the summary and `still_billing` (what it cannot delete). For the managed targets.
RenderedFile CleanupScript(const RenderContext& ctx, const std::string& body,
                           const std::vector<std::string>& still_billing);

}  // namespace k3::deploy
