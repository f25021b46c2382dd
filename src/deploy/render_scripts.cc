// Cluster scripts (see render_scripts.h). Commands follow the guide's §3.2, §4.2-4.6 and §5.2-5.7.
#include "src/deploy/render_scripts.h"

namespace k3::deploy {
namespace {

std::string Header(const RenderContext& ctx, const std::string& what) {
  return fmt::format(
      "#!/usr/bin/env bash\n# {} for {} on {} (rendered by k3 render; review before running).\nset -euo "
      "pipefail\n\n",
      what, ctx.model.served_name, ctx.plan.target.id);
}

int PoolNodes(const RenderContext& ctx) { return ctx.plan.layout.nodes * ctx.plan.replicas; }

std::vector<RenderedFile> AzureScripts(const RenderContext& ctx, const std::string& manifest) {
  std::string setup = Header(ctx, "AKS cluster and GB300 node pool");
  setup += fmt::format(
      "RESOURCE_GROUP=${{RESOURCE_GROUP:-rg-{0}}}\nLOCATION=${{LOCATION:?set LOCATION to a region with ND "
      "GB300 v6}}\n"
      "CLUSTER=${{CLUSTER:-aks-{0}}}\nSTORAGE_ACCOUNT=${{STORAGE_ACCOUNT:?set STORAGE_ACCOUNT}}\n\n"
      "# Capacity first (several business days): ND GB300 v6 has a default quota of 0. Request\n"
      "# 'Standard NDGB300v6 Family vCPUs' ({1} vCPUs for {2} VMs) under Quotas > Compute, and for "
      "persistent\n"
      "# workloads create a Capacity Reservation Group. Talk to your account team: the SKU may not be in "
      "your region.\n\n"
      "az group create --name \"$RESOURCE_GROUP\" --location \"$LOCATION\"\n\n"
      "az aks create \\\n  --resource-group \"$RESOURCE_GROUP\" \\\n  --name \"$CLUSTER\" \\\n  --node-count "
      "2 \\\n"
      "  --node-vm-size Standard_D8s_v5 \\\n  --enable-managed-identity \\\n  --generate-ssh-keys\n\n"
      "# GPU node pool: {2} x {3} (one NVL72 rack holds at most 18 VMs).\n"
      "az aks nodepool add \\\n  --resource-group \"$RESOURCE_GROUP\" \\\n  --cluster-name \"$CLUSTER\" \\\n"
      "  --name gb300pool \\\n  --node-count {2} \\\n  --node-vm-size {3} \\\n"
      "  --node-taints nvidia.com/gpu=present:NoSchedule \\\n  --skip-gpu-driver-install false\n\n"
      "az aks get-credentials --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\"\n\n"
      "# Weights: a Blob container in the cluster's region; weights.yaml's Job fills the cache volume.\n"
      "az storage container create --name {0}-weights --account-name \"$STORAGE_ACCOUNT\"\n",
      ctx.app_name, ctx.plan.instance.vcpu * PoolNodes(ctx), PoolNodes(ctx), ctx.plan.instance.id);
  std::string cleanup = Header(ctx, "Cleanup (everything that keeps billing)");
  cleanup += fmt::format(
      "RESOURCE_GROUP=${{RESOURCE_GROUP:-rg-{0}}}\nCLUSTER=${{CLUSTER:-aks-{0}}}\n\n"
      "kubectl delete -f {1} --ignore-not-found\nkubectl delete -f weights.yaml --ignore-not-found\n"
      "az aks nodepool delete --resource-group \"$RESOURCE_GROUP\" --cluster-name \"$CLUSTER\" --name "
      "gb300pool\n"
      "az group delete --name \"$RESOURCE_GROUP\" --yes\n\n"
      "# Billing continues until the Capacity Reservation Group is deleted separately:\n"
      "#   az capacity reservation group list -o table\n"
      "#   az capacity reservation delete ...; az capacity reservation group delete ...\n",
      ctx.app_name, manifest);
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

std::vector<RenderedFile> GcpScripts(const RenderContext& ctx, const std::string& manifest) {
  std::string setup = Header(ctx, "GKE cluster and A4X Max node pool");
  setup += fmt::format(
      "PROJECT_ID=${{PROJECT_ID:?set PROJECT_ID}}\nREGION=${{REGION:?set REGION}}\nZONE=${{ZONE:?set ZONE}}\n"
      "CLUSTER_NAME=${{CLUSTER_NAME:-gke-{0}}}\n"
      "RESERVATION=${{RESERVATION:?set RESERVATION to <RESERVATION_NAME>/reservationBlocks/<BLOCK>/"
      "reservationSubBlocks/<SUB_BLOCK>}}\n"
      "WORKLOAD_POLICY=${{WORKLOAD_POLICY:?set WORKLOAD_POLICY to the placement policy name}}\n\n"
      "# Capacity first: A4X Max cannot be created without a reservation (sales representative or\n"
      "# Compute Engine > Reservations), organised in blocks / sub-blocks. A node pool holds at most 18 "
      "nodes.\n\n"
      "gcloud container clusters create \"$CLUSTER_NAME\" \\\n  --project=\"$PROJECT_ID\" \\\n"
      "  --location=\"$REGION\" \\\n  --node-locations=\"$ZONE\" \\\n  --num-nodes=2 \\\n"
      "  --machine-type=e2-standard-8 \\\n  --enable-dataplane-v2 \\\n  --enable-ip-alias\n\n"
      "gcloud container node-pools create a4x-max-pool \\\n  --cluster=\"$CLUSTER_NAME\" \\\n"
      "  --location=\"$REGION\" \\\n  --node-locations=\"$ZONE\" \\\n  --num-nodes={1} \\\n"
      "  --machine-type={2} \\\n  --accelerator=type=nvidia-gb300,count={3},gpu-driver-version=latest \\\n"
      "  --placement-policy=\"$WORKLOAD_POLICY\" \\\n  --accelerator-network-profile=auto \\\n"
      "  --node-labels=cloud.google.com/gke-networking-dra-driver=true,cloud.google.com/gke-dpv2-unified-cni="
      "cni-migration \\\n  --reservation-affinity=specific \\\n  --reservation=\"$RESERVATION\"\n\n"
      "gcloud container clusters get-credentials \"$CLUSTER_NAME\" --location=\"$REGION\"\n\n"
      "# Weights: a GCS bucket in the cluster's region; weights.yaml's Job fills the cache volume.\n"
      "gcloud storage buckets create gs://{0}-weights --location=\"$REGION\"\n",
      ctx.app_name, PoolNodes(ctx), ctx.plan.instance.id, ctx.plan.instance.gpu_count);
  if (ctx.options.gateway) {
    setup +=
        "\n# Inference Gateway CRDs (gateway.yaml):\nkubectl apply -f https://github.com/kubernetes-sigs/"
        "gateway-api-inference-extension/releases/latest/download/manifests.yaml\n";
  }
  std::string cleanup = Header(ctx, "Cleanup (everything that keeps billing)");
  cleanup += fmt::format(
      "REGION=${{REGION:?set REGION}}\nCLUSTER_NAME=${{CLUSTER_NAME:-gke-{0}}}\n\n"
      "kubectl delete -f {1} --ignore-not-found\nkubectl delete -f weights.yaml --ignore-not-found\n"
      "gcloud container node-pools delete a4x-max-pool --cluster=\"$CLUSTER_NAME\" --location=\"$REGION\" "
      "--quiet\n"
      "gcloud container clusters delete \"$CLUSTER_NAME\" --location=\"$REGION\" --quiet\n\n"
      "# Billing continues until the reservation is released separately:\n"
      "#   gcloud compute reservations list; gcloud compute reservations delete <RESERVATION_NAME> "
      "--zone=<ZONE>\n"
      "# The weights bucket also costs storage: gcloud storage rm --recursive gs://{0}-weights\n",
      ctx.app_name, manifest);
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

std::vector<RenderedFile> EksScripts(const RenderContext& ctx, const std::string& manifest) {
  std::string setup = Header(ctx, "EKS capacity and GPU prerequisites");
  setup += fmt::format(
      "# 1. Provision the EKS cluster (VPC, managed node groups, IAM) — the guide points to the AI on EKS\n"
      "#    Terraform modules for the full setup.\n"
      "# 2. Capacity Blocks: find and buy {1} x {0} in the target AZ; the instances join as worker\n"
      "#    nodes when the block activates. A Capacity Block is billed for its whole duration.\n"
      "aws ec2 describe-capacity-block-offerings --instance-type {0} --instance-count {1} "
      "--capacity-duration-hours 24\n"
      "#   aws ec2 purchase-capacity-block --capacity-block-offering-id <OFFERING_ID> --instance-platform "
      "Linux/UNIX\n"
      "# 3. NVIDIA device plugin, so the nodes advertise nvidia.com/gpu:\n"
      "kubectl apply -f "
      "https://raw.githubusercontent.com/NVIDIA/k8s-device-plugin/v0.17.0/deployments/static/"
      "nvidia-device-plugin.yml\n",
      ctx.plan.instance.id, PoolNodes(ctx));
  std::string cleanup = Header(ctx, "Cleanup");
  cleanup += fmt::format(
      "kubectl delete -f {} --ignore-not-found\nkubectl delete -f weights.yaml --ignore-not-found\n"
      "# A Capacity Block cannot be cancelled; it bills until its end. Delete node groups and the cluster "
      "with\n"
      "# the Terraform that created them (terraform destroy).\n",
      manifest);
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

}  // namespace

std::vector<RenderedFile> ClusterScripts(const RenderContext& ctx, const std::string& manifest_file) {
  const std::string& t = ctx.plan.target.id;
  if (t == "azure-aks") return AzureScripts(ctx, manifest_file);
  if (t == "gcp-gke") return GcpScripts(ctx, manifest_file);
  if (t == "aws-eks") return EksScripts(ctx, manifest_file);
  return {};
}

}  // namespace k3::deploy
