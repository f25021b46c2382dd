// azure-ml with --compute kubernetes: Azure ML online deployments on Kubernetes compute (the guide's §4.5
// alternative). The AzureML cluster extension on an AKS cluster (`az k8s-extension create`), the cluster
// attached to the workspace (`az ml compute attach --type Kubernetes`), an InstanceType custom resource
// that pins the deployment's pod to the GPU node pool, and the endpoint / deployment YAML on that compute.
// One deployment instance is one pod: a plan that needs two nodes is refused by Render (docs/deploy.md).
#pragma once

#include <string>
#include <vector>

#include "src/deploy/render.h"

namespace k3::deploy {

// The attached compute's name in the workspace, and the AKS namespace the extension serves from.
inline constexpr const char* kAmlK8sCompute = "k3-aks";
inline constexpr const char* kAmlK8sNamespace = "azureml";

struct AzureMlKubernetes {
  std::vector<RenderedFile> files;  // setup-aml-k8s.sh, instancetype.yaml
  std::string cleanup;              // `run ...` lines after the endpoint is deleted
  std::vector<std::string> still_billing;
};

// Turns the managed endpoint / deployment documents into their Kubernetes-compute forms (schemas,
// `compute`, `instance_type`) and returns the files that set the compute up and tear it down.
AzureMlKubernetes AzureMlOnKubernetes(const RenderContext& ctx, Doc& endpoint, Doc& deployment);

// The InstanceType's name: the AKS GPU pool it selects ("gb300pool").
std::string AmlInstanceTypeName(const RenderContext& ctx);

}  // namespace k3::deploy
