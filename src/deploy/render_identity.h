// Cloud identities of the serving pods and the weights Job when they read (or fill) a bucket: AKS
// workload identity for az:// (OIDC issuer, user-assigned identity, Storage Blob Data role, federated
// credential, annotated ServiceAccount), GKE Workload Identity Federation for gs:// (workload pool,
// GKE_METADATA node pools, a bucket IAM binding for the Kubernetes ServiceAccount's principal). The
// setup / cleanup lines go into the target's scripts; the pod side (serviceAccountName, label) into
// every pod that touches the bucket.
#pragma once

#include <string>

#include "src/deploy/render.h"

namespace k3::deploy {

// azure-aks with az:// or gcp-gke with gs:// weights streamed from the bucket.
bool UsesWorkloadIdentity(const RenderContext& ctx);

// The Kubernetes ServiceAccount the pods run as ("kimi-k3").
std::string WorkloadServiceAccount(const RenderContext& ctx);

// Adds serviceAccountName (and AKS's azure.workload.identity/use label) to a pod spec and its labels.
void AddWorkloadIdentity(const RenderContext& ctx, Doc& pod_spec, Doc& pod_labels);

// Shell lines for setup-cluster.sh after the cluster exists and kubectl points at it (az / gcloud,
// then the ServiceAccount), and for cleanup.sh (`run WHAT CMD...` lines). "" when not used.
std::string WorkloadIdentitySetup(const RenderContext& ctx);
std::string WorkloadIdentityCleanup(const RenderContext& ctx);

}  // namespace k3::deploy
