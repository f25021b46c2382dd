// Azure ML on Kubernetes compute (see render_azureml_k8s.h). Sources: Microsoft Learn "Deploy Azure Machine
// Learning extension on AKS or Arc Kubernetes cluster" (k8s-extension config keys), "Attach a Kubernetes
// cluster to Azure Machine Learning workspace" (az ml compute attach), "Create and manage instance types"
// (the InstanceType custom resource), the CLI v2 kubernetesOnlineEndpoint / kubernetesOnlineDeployment
// YAML schemas.
#include "src/deploy/render_azureml_k8s.h"

#include <algorithm>

#include "src/deploy/render_workload.h"

namespace k3::deploy {

std::string AmlInstanceTypeName(const RenderContext& ctx) { return AksGpuPoolName(ctx); }

AzureMlKubernetes AzureMlOnKubernetes(const RenderContext& ctx, Doc& endpoint, Doc& deployment) {
  const std::string instance_type = AmlInstanceTypeName(ctx);
  endpoint["$schema"] = "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineEndpoint.schema.json";
  endpoint["compute"] = std::string("azureml:") + kAmlK8sCompute;
  deployment["$schema"] =
      "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineDeployment.schema.json";
  deployment["instance_type"] = instance_type;  // the InstanceType below, not a VM size

  // The pod of one deployment instance takes one node of the pool: every GPU, 90 % of vCPUs and RAM.
  const Instance& vm = ctx.plan.instance;
  const std::string cpus = std::to_string(std::max(1, vm.vcpu * 9 / 10));
  const std::string memory = std::to_string(static_cast<int64_t>(vm.ram_gib) * 9 / 10) + "Gi";
  Doc limits = {{"cpu", cpus}, {"memory", memory}, {"nvidia.com/gpu", vm.gpu_count}};
  Doc instance = {{"apiVersion", "amlarc.azureml.com/v1alpha1"},
                  {"kind", "InstanceType"},
                  {"metadata", {{"name", instance_type}}},
                  {"spec",
                   {{"nodeSelector", {{"agentpool", instance_type}}},
                    {"resources", {{"requests", {{"cpu", cpus}, {"memory", memory}}}, {"limits", limits}}}}}};
  AzureMlKubernetes out;
  out.files.push_back(
      {"instancetype.yaml",
       YamlFile({"Azure ML InstanceType (custom resource of the AzureML extension): deployments with "
                 "instance_type: " +
                     instance_type + " run on the AKS pool " + instance_type,
                 "cluster-scoped; setup-aml-k8s.sh applies it after the extension installs its CRD"},
                {instance})});

  const int nodes = std::max(1, ctx.plan.replicas);
  std::string s =
      "#!/usr/bin/env bash\n# Azure ML Kubernetes compute for " + ctx.model.served_name + " on " + vm.id +
      " (rendered by k3 render): a GPU pool on your AKS cluster, the AzureML extension, the cluster\n"
      "# attached to the workspace, and the InstanceType the deployment names.\n"
      "set -euo pipefail\ncd \"$(dirname \"$0\")\"\n"
      "RESOURCE_GROUP=${RESOURCE_GROUP:?set RESOURCE_GROUP (of the workspace and the AKS cluster)}\n"
      "WORKSPACE=${WORKSPACE:?set WORKSPACE}\nCLUSTER=${CLUSTER:?set CLUSTER to the name of the AKS "
      "cluster}\n\n"
      "az extension add --name k8s-extension --upgrade --yes\naz extension add --name ml --upgrade --yes\n\n";
  s += fmt::format(
      "# 1. The GPU pool. No NoSchedule taint: an InstanceType sets a node selector and resources but no\n"
      "#    tolerations, so Azure ML's pods could not land on a tainted pool.\n"
      "if ! az aks nodepool show --resource-group \"$RESOURCE_GROUP\" --cluster-name \"$CLUSTER\" "
      "--name {0} >/dev/null 2>&1; then\n"
      "  az aks nodepool add --resource-group \"$RESOURCE_GROUP\" --cluster-name \"$CLUSTER\" --name {0} "
      "--node-count {1} --node-vm-size {2}\nfi\n"
      "az aks get-credentials --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\"\n\n",
      instance_type, nodes, vm.id);
  s += fmt::format(
      "# 2. The AzureML extension with inference enabled; its router is a LoadBalancer Service over HTTP\n"
      "#    (allowInsecureConnections; set sslCertPemFile / sslKeyPemFile and sslCname for HTTPS).\n"
      "az k8s-extension create --name azureml --extension-type Microsoft.AzureML.Kubernetes "
      "--cluster-type managedClusters \\\n  --cluster-name \"$CLUSTER\" --resource-group \"$RESOURCE_GROUP\" "
      "--scope cluster \\\n  --config enableInference=True inferenceRouterServiceType=LoadBalancer "
      "allowInsecureConnections=True\n\n"
      "# 3. Attach the cluster to the workspace as Kubernetes compute {0} (namespace {1}).\n"
      "AKS_ID=$(az aks show --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\" --query id --output "
      "tsv)\n"
      "kubectl create namespace {1} --dry-run=client --output yaml | kubectl apply -f -\n"
      "az ml compute attach --resource-group \"$RESOURCE_GROUP\" --workspace-name \"$WORKSPACE\" \\\n"
      "  --type Kubernetes --name {0} --resource-id \"$AKS_ID\" --identity-type SystemAssigned "
      "--namespace {1}\n\n"
      "# 4. The InstanceType the deployment names (the CRD comes with the extension).\n"
      "kubectl apply -f instancetype.yaml\n",
      kAmlK8sCompute, kAmlK8sNamespace);
  out.files.push_back({"setup-aml-k8s.sh", s});

  const std::string where = " --resource-group \"$RESOURCE_GROUP\" --workspace-name \"$WORKSPACE\"";
  out.cleanup =
      std::string("CLUSTER=${CLUSTER:?set CLUSTER to the name of the AKS cluster}\n") + "run \"compute " +
      kAmlK8sCompute + " (detached; the cluster stays)\" az ml compute detach --name " + kAmlK8sCompute +
      where + " --yes\n" + "run \"InstanceType " + instance_type +
      "\" kubectl delete -f instancetype.yaml --ignore-not-found\n" +
      "run \"AzureML extension\" az k8s-extension delete --name azureml --cluster-type managedClusters "
      "--cluster-name \"$CLUSTER\" --resource-group \"$RESOURCE_GROUP\" --yes\n" +
      "run \"node pool " + instance_type +
      "\" az aks nodepool delete --resource-group \"$RESOURCE_GROUP\" --cluster-name \"$CLUSTER\" "
      "--name " +
      instance_type + "\n";
  out.still_billing = {"the AKS cluster $CLUSTER (it was yours before setup-aml-k8s.sh)"};
  return out;
}

}  // namespace k3::deploy
