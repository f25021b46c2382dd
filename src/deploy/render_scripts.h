// Cluster scripts for the managed-Kubernetes targets (az / gcloud / aws): create the cluster and the GPU
// node pool of the plan's instance (or, on a CPU-only instance, an on-demand CPU node pool), attach the
// capacity reservation, wire the pods' workload identity for bucket weights, and clean up everything that
// setup created and that keeps billing, reservations included; cleanup.sh for every other target too.
// Text only; nothing is executed.
#pragma once

#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

// setup-cluster.sh and cleanup.sh for azure-aks, gcp-gke and aws-eks; cleanup.sh alone for k8s.
std::vector<RenderedFile> ClusterScripts(const RenderContext& ctx, const std::string& manifest_file);

// cleanup.sh around `body` (lines of `run WHAT COMMAND...`): runs from any directory, never stops at a
// failure, ends with the summary and `still_billing` (what it cannot delete). For the managed targets.
RenderedFile CleanupScript(const RenderContext& ctx, const std::string& body,
                           const std::vector<std::string>& still_billing);

}  // namespace k3::deploy
