// Cluster scripts (see render_scripts.h). Commands follow the guide's §3.2, §4.2-4.6 and §5.2-5.7.
// Cleanup scripts run from any directory, keep going past a failed or already-deleted resource, delete in
// dependency order (workloads, node pools, clusters, reservations, resource groups) and end with a summary
// of what is gone and what may still bill.
#include "src/deploy/render_scripts.h"

#include "src/deploy/render_gateway.h"
#include "src/deploy/render_identity.h"
#include "src/deploy/render_k8s_common.h"
#include "src/deploy/render_ops.h"
#include "src/deploy/render_workload.h"

namespace k3::deploy {
namespace {

std::string Header(const RenderContext& ctx, const std::string& what) {
  return fmt::format(
      "#!/usr/bin/env bash\n# {} for {} on {} (rendered by k3 render; review before running).\nset -euo "
      "pipefail\ncd \"$(dirname \"$0\")\"\n\n",
      what, ctx.model.served_name, ctx.plan.target.id);
}

// The cleanup prologue: no `set -e`; `run WHAT CMD...` records WHAT as deleted, already gone or failed.
std::string CleanupHeader(const RenderContext& ctx) {
  return fmt::format(
      "#!/usr/bin/env bash\n# Cleanup of {} on {} (rendered by k3 render). Runs from any directory, "
      "continues "
      "past\n# failures and already-deleted resources, deletes in dependency order, and ends with a "
      "summary.\n"
      "set -uo pipefail\ncd \"$(dirname \"$0\")\" || exit 1\n\n"
      "deleted=()\nalready_gone=()\nfailed=()\n"
      "run() {{  # run WHAT COMMAND...\n  local what=$1 out rc\n  shift\n  echo \"--- $what\"\n"
      "  out=$(\"$@\" 2>&1)\n  rc=$?\n  [[ -n \"$out\" ]] && echo \"$out\"\n"
      "  if [[ $rc -eq 0 ]]; then\n    deleted+=(\"$what\")\n"
      "  elif grep -qiE 'not ?found|does not exist|could not be found' <<<\"$out\"; then\n"
      "    already_gone+=(\"$what\")\n  else\n    failed+=(\"$what\")\n  fi\n}}\n\n",
      ctx.model.served_name, ctx.plan.target.id);
}

// The summary; `still_billing` lists what cleanup cannot delete (printed whatever happened).
std::string CleanupSummary(const std::vector<std::string>& still_billing) {
  std::string s =
      "\necho\necho \"=== Summary\"\nfor x in \"${deleted[@]}\"; do echo \"deleted:      $x\"; done\n"
      "for x in \"${already_gone[@]}\"; do echo \"already gone: $x\"; done\n"
      "for x in \"${failed[@]}\"; do echo \"FAILED (still exists, may bill): $x\"; done\n";
  for (const std::string& b : still_billing) s += "echo \"still billing: " + b + "\"\n";
  s += "if [[ ${#failed[@]} -eq 0 ]]; then echo \"nothing left that k3 created\"; else exit 1; fi\n";
  return s;
}

// kubectl deletes of the rendered files, gateway first (it routes to the workload).
std::string KubectlDeletes(const RenderContext& ctx, const std::string& manifest) {
  std::string s = OpsCleanup(ctx);  // --autoscale / --monitoring objects first
  if (ctx.options.gateway)
    s += "run \"gateway.yaml objects\" kubectl delete -f gateway.yaml --ignore-not-found\n";
  s += "run \"" + manifest + " objects\" kubectl delete -f " + manifest + " --ignore-not-found\n";
  if (!ctx.stream_weights) {
    s += "run \"weights.yaml objects (PVC, Job)\" kubectl delete -f weights.yaml --ignore-not-found\n";
  } else if (ctx.presync_job()) {
    s += "run \"weights.yaml objects (Job; the bucket keeps the weights)\" kubectl delete -f weights.yaml "
         "--ignore-not-found\n";
  }
  if (!ctx.options.name_space.empty()) {
    s += "run \"namespace " + ctx.options.name_space +
         "\" kubectl delete -f namespace.yaml --ignore-not-found\n";
  }
  return s;
}

std::string GatewaySetup(const RenderContext& ctx) {
  if (!ctx.options.gateway) return "";
  std::string s = "\n# Inference Gateway (gateway.yaml): CRDs and the gateway implementation.\n";
  for (const std::string& c : GatewayInstallCommands(ctx)) s += c + "\n";
  return s;
}

int PoolNodes(const RenderContext& ctx) { return ctx.plan.layout.nodes * ctx.plan.replicas; }

std::vector<RenderedFile> AzureScripts(const RenderContext& ctx, const std::string& manifest) {
  const std::string pool = AksGpuPoolName(ctx);
  const bool identity = UsesWorkloadIdentity(ctx);
  std::string setup = Header(ctx, "AKS cluster and " + ctx.plan.instance.gpu + " node pool");
  setup += fmt::format(
      "RESOURCE_GROUP=${{RESOURCE_GROUP:-rg-{0}}}\nLOCATION=${{LOCATION:?set LOCATION to a region with "
      "{3}}}\nCLUSTER=${{CLUSTER:-aks-{0}}}\n"
      "# The resource id of a Capacity Reservation Group holding {2} x {3} (optional; without it the pool\n"
      "# runs on on-demand capacity): /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Compute/"
      "capacityReservationGroups/NAME\n"
      "CAPACITY_RESERVATION_GROUP_ID=${{CAPACITY_RESERVATION_GROUP_ID:-}}\n\n"
      "# Capacity first (several business days): GPU VM families have a default quota of 0. Request\n"
      "# {1} vCPUs of the {3} family for {2} VMs under Quotas > Compute. Talk to your account team: the\n"
      "# SKU may not be in your region.\n\n"
      "az group create --name \"$RESOURCE_GROUP\" --location \"$LOCATION\"\n\n"
      "# A capacity reservation group is attached to a node pool at creation (--crg-id; az >= 2.56), through "
      "a\n"
      "# user-assigned cluster identity with Contributor on the group's resource group (Microsoft Learn,\n"
      "# \"Assign capacity reservation groups to AKS node pools\"). Unattached, it bills beside on-demand "
      "VMs.\n"
      "IDENTITY_ARGS=()\nCRG_ARGS=()\nif [[ -n \"$CAPACITY_RESERVATION_GROUP_ID\" ]]; then\n"
      "  az identity create --name \"id-$CLUSTER\" --resource-group \"$RESOURCE_GROUP\" --location "
      "\"$LOCATION\"\n"
      "  IDENTITY_ID=$(az identity show --name \"id-$CLUSTER\" --resource-group \"$RESOURCE_GROUP\" --query "
      "id "
      "--output tsv)\n"
      "  IDENTITY_PRINCIPAL=$(az identity show --name \"id-$CLUSTER\" --resource-group \"$RESOURCE_GROUP\" "
      "--query principalId --output tsv)\n"
      "  az role assignment create --assignee-object-id \"$IDENTITY_PRINCIPAL\" --assignee-principal-type "
      "ServicePrincipal --role Contributor --scope \"${{CAPACITY_RESERVATION_GROUP_ID%%/providers/*}}\"\n"
      "  IDENTITY_ARGS=(--assign-identity \"$IDENTITY_ID\")\n"
      "  CRG_ARGS=(--crg-id \"$CAPACITY_RESERVATION_GROUP_ID\")\nelse\n"
      "  echo \"CAPACITY_RESERVATION_GROUP_ID not set: the {5} pool runs on on-demand capacity\" >&2\nfi\n\n"
      "az aks create \\\n  --resource-group \"$RESOURCE_GROUP\" \\\n  --name \"$CLUSTER\" \\\n  --node-count "
      "2 \\\n  --node-vm-size Standard_D8s_v5 \\\n  --enable-managed-identity \\\n  "
      "\"${{IDENTITY_ARGS[@]}}\" "
      "\\\n{4}  --generate-ssh-keys\n\n"
      "# GPU node pool: {2} x {3}{6}.\n"
      "az aks nodepool add \\\n  --resource-group \"$RESOURCE_GROUP\" \\\n  --cluster-name \"$CLUSTER\" \\\n"
      "  --name {5} \\\n  --node-count {2} \\\n  --node-vm-size {3} \\\n"
      "  --node-taints nvidia.com/gpu=present:NoSchedule \\\n  \"${{CRG_ARGS[@]}}\"\n\n"
      "az aks get-credentials --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\"\n",
      ctx.app_name, ctx.plan.instance.vcpu * PoolNodes(ctx), PoolNodes(ctx), ctx.plan.instance.id,
      identity ? "  --enable-oidc-issuer \\\n  --enable-workload-identity \\\n" : "", pool,
      ctx.plan.instance.rack_vms > 0
          ? fmt::format(" (one NVL72 rack holds at most {} VMs)", ctx.plan.instance.rack_vms)
          : "");
  setup += WorkloadIdentitySetup(ctx);
  setup += GatewaySetup(ctx);
  std::string cleanup = CleanupHeader(ctx);
  cleanup += fmt::format(
      "RESOURCE_GROUP=${{RESOURCE_GROUP:-rg-{0}}}\nCLUSTER=${{CLUSTER:-aks-{0}}}\n"
      "# The capacity reservation group setup-cluster.sh attached, read from the node pool before it goes.\n"
      "CAPACITY_RESERVATION_GROUP_ID=${{CAPACITY_RESERVATION_GROUP_ID:-$(az aks nodepool show "
      "--resource-group "
      "\"$RESOURCE_GROUP\" --cluster-name \"$CLUSTER\" --name {1} --query capacityReservationGroupId "
      "--output "
      "tsv 2>/dev/null)}}\n\n",
      ctx.app_name, pool);
  cleanup += KubectlDeletes(ctx, manifest);
  cleanup += WorkloadIdentityCleanup(ctx);
  cleanup += fmt::format(
      "run \"node pool {0}\" az aks nodepool delete --resource-group \"$RESOURCE_GROUP\" "
      "--cluster-name \"$CLUSTER\" --name {0}\n"
      "run \"AKS cluster $CLUSTER\" az aks delete --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\" "
      "--yes\n",
      pool);
  cleanup +=
      "# Capacity reservations bill until deleted, whether or not a VM uses them.\n"
      "if [[ -n \"$CAPACITY_RESERVATION_GROUP_ID\" ]]; then\n"
      "  crg_rg=${CAPACITY_RESERVATION_GROUP_ID#*/resourceGroups/}\n  crg_rg=${crg_rg%%/*}\n"
      "  crg=${CAPACITY_RESERVATION_GROUP_ID##*/}\n"
      "  if reservations=$(az capacity reservation list --resource-group \"$crg_rg\" "
      "--capacity-reservation-group \"$crg\" --query '[].name' --output tsv 2>&1); then\n"
      "    for r in $reservations; do\n"
      "      run \"capacity reservation $r\" az capacity reservation delete --resource-group \"$crg_rg\" "
      "--capacity-reservation-group \"$crg\" --capacity-reservation-name \"$r\" --yes\n    done\n"
      "  else\n    echo \"$reservations\"\n"
      "    failed+=(\"capacity reservations of $crg (could not list them: they may still bill)\")\n  fi\n"
      "  run \"capacity reservation group $crg\" az capacity reservation group delete --resource-group "
      "\"$crg_rg\" --capacity-reservation-group \"$crg\" --yes\n"
      "else\n  echo \"no capacity reservation group attached to the node pool and none given "
      "(CAPACITY_RESERVATION_GROUP_ID): none deleted\"\nfi\n"
      "run \"resource group $RESOURCE_GROUP\" az group delete --name \"$RESOURCE_GROUP\" --yes\n";
  cleanup += CleanupSummary({});
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

// GKE pool of the plan's GPU instance. A4X Max (rack-bound GB300, rack_vms > 0) nodes also need the
// workload placement policy, the accelerator network profile and the DRA networking labels (guide §5.2);
// other GPU machines (A3 Ultra, A4) take the accelerator and the reservation only.
std::string GcpGpuPoolName(const RenderContext& ctx) {
  return ctx.plan.instance.rack_vms > 0 ? "a4x-max-pool" : "gpu-pool";
}

std::string GcpGatewayVariables(const RenderContext& ctx) {
  if (!ctx.options.gateway) return "";
  return "NETWORK=${NETWORK:-default}\n"
         "# The proxy-only subnet GKE's regional external gateway needs: an unused /23 of $NETWORK.\n"
         "PROXY_SUBNET_RANGE=${PROXY_SUBNET_RANGE:-10.129.0.0/23}\n";
}

std::string GcpClusterFlags(const RenderContext& ctx) {
  std::string f;
  if (ctx.options.gateway) f += " \\\n  --gateway-api=standard";
  // The weights PVC's StorageClass (premium-rwx, Filestore) needs the Filestore CSI driver add-on.
  if (!ctx.stream_weights) f += " \\\n  --addons=GcpFilestoreCsiDriver";
  if (UsesWorkloadIdentity(ctx)) f += " \\\n  --workload-pool=\"$PROJECT_ID.svc.id.goog\"";
  return f;
}

std::string GcpGatewayCleanup(const RenderContext& ctx) {
  if (!ctx.options.gateway) return "";
  return "run \"proxy-only subnet k3-proxy-only\" gcloud compute networks subnets delete k3-proxy-only "
         "--project=\"$PROJECT_ID\" --region=\"$REGION\" --quiet\n";
}

std::vector<RenderedFile> GcpScripts(const RenderContext& ctx, const std::string& manifest) {
  const Instance& in = ctx.plan.instance;
  const bool a4x = in.rack_vms > 0;
  const std::string pool = GcpGpuPoolName(ctx);
  std::string setup = Header(ctx, "GKE cluster and " + in.id + " node pool");
  setup += fmt::format(
      "PROJECT_ID=${{PROJECT_ID:?set PROJECT_ID}}\nREGION=${{REGION:?set REGION}}\nZONE=${{ZONE:?set ZONE}}\n"
      "CLUSTER_NAME=${{CLUSTER_NAME:-gke-{0}}}\n"
      "RESERVATION=${{RESERVATION:?set RESERVATION to the reservation of {1} x {2}{3}}}\n{4}{5}\n"
      "# Capacity first: {2} is created from a reservation (sales representative or Compute Engine >\n"
      "# Reservations){6}.\n\n"
      "gcloud container clusters create \"$CLUSTER_NAME\" \\\n  --project=\"$PROJECT_ID\" \\\n"
      "  --location=\"$REGION\" \\\n  --node-locations=\"$ZONE\" \\\n  --num-nodes=2 \\\n"
      "  --machine-type=e2-standard-8 \\\n  --enable-dataplane-v2 \\\n  --enable-ip-alias{7}\n\n"
      "gcloud container node-pools create {8} \\\n  --cluster=\"$CLUSTER_NAME\" \\\n"
      "  --project=\"$PROJECT_ID\" \\\n  --location=\"$REGION\" \\\n  --node-locations=\"$ZONE\" \\\n"
      "  --num-nodes={1} \\\n  --machine-type={2} \\\n"
      "  --accelerator=type={9},count={10},gpu-driver-version=latest \\\n{11}{12}"
      "  --reservation-affinity=specific \\\n  --reservation=\"$RESERVATION\"\n\n"
      "gcloud container clusters get-credentials \"$CLUSTER_NAME\" --project=\"$PROJECT_ID\" "
      "--location=\"$REGION\"\n",
      ctx.app_name, PoolNodes(ctx), in.id,
      a4x ? " (RESERVATION_NAME/reservationBlocks/BLOCK/reservationSubBlocks/SUB_BLOCK)" : "",
      a4x ? "WORKLOAD_POLICY=${WORKLOAD_POLICY:?set WORKLOAD_POLICY to the placement policy name}\n" : "",
      GcpGatewayVariables(ctx),
      a4x ? fmt::format(", organised in blocks / sub-blocks; a node pool holds at most {} nodes", in.rack_vms)
          : "",
      GcpClusterFlags(ctx), pool, in.gcp_accelerator, in.gpu_count,
      a4x ? "  --placement-policy=\"$WORKLOAD_POLICY\" \\\n  --accelerator-network-profile=auto \\\n"
            "  --node-labels=cloud.google.com/gke-networking-dra-driver=true,cloud.google.com/"
            "gke-dpv2-unified-cni=cni-migration \\\n"
          : "",
      UsesWorkloadIdentity(ctx) ? "  --workload-metadata=GKE_METADATA \\\n" : "");
  setup += WorkloadIdentitySetup(ctx);
  setup += GatewaySetup(ctx);
  std::string cleanup = CleanupHeader(ctx);
  cleanup += fmt::format(
      "PROJECT_ID=${{PROJECT_ID:?set PROJECT_ID}}\nREGION=${{REGION:?set REGION}}\nZONE=${{ZONE:?set ZONE}}\n"
      "CLUSTER_NAME=${{CLUSTER_NAME:-gke-{0}}}\n"
      "RESERVATION=${{RESERVATION:?set RESERVATION (the reservation the node pool used; it bills until "
      "deleted)}}\n\n",
      ctx.app_name);
  cleanup += KubectlDeletes(ctx, manifest);
  cleanup += WorkloadIdentityCleanup(ctx);
  cleanup += fmt::format(
      "run \"node pool {0}\" gcloud container node-pools delete {0} "
      "--cluster=\"$CLUSTER_NAME\" --project=\"$PROJECT_ID\" --location=\"$REGION\" --quiet\n"
      "run \"GKE cluster $CLUSTER_NAME\" gcloud container clusters delete \"$CLUSTER_NAME\" "
      "--project=\"$PROJECT_ID\" --location=\"$REGION\" --quiet\n",
      pool);
  cleanup += GcpGatewayCleanup(ctx);
  cleanup +=
      "run \"reservation ${RESERVATION%%/*}\" gcloud compute reservations delete \"${RESERVATION%%/*}\" "
      "--project=\"$PROJECT_ID\" --zone=\"$ZONE\" --quiet\n";
  cleanup += CleanupSummary({});
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

std::vector<RenderedFile> EksScripts(const RenderContext& ctx, const std::string& manifest) {
  std::string setup = Header(ctx, "EKS capacity and GPU prerequisites");
  const bool shared =
      ctx.plan.layout.nodes * ctx.max_replicas() > 1 && !ctx.stream_weights;  // pods share the volume
  setup += fmt::format(
      "CLUSTER=${{CLUSTER:?set CLUSTER to the EKS cluster name}}\n{2}{3}\n"
      "# 1. Provision the EKS cluster (VPC, managed node groups, IAM) — the guide points to the AI on EKS\n"
      "#    Terraform modules for the full setup.\n"
      "# 2. Capacity Blocks: find and buy {1} x {0} in the target AZ; the instances join as worker\n"
      "#    nodes when the block activates. A Capacity Block is billed for its whole duration.\n"
      "aws ec2 describe-capacity-block-offerings --instance-type {0} --instance-count {1} "
      "--capacity-duration-hours 24\n"
      "if [[ -n \"$OFFERING_ID\" ]]; then\n"
      "  aws ec2 purchase-capacity-block --capacity-block-offering-id \"$OFFERING_ID\" --instance-platform "
      "Linux/UNIX\nfi\n"
      "aws eks update-kubeconfig --name \"$CLUSTER\"\n"
      "# 3. NVIDIA device plugin, so the nodes advertise nvidia.com/gpu:\n"
      "kubectl apply -f "
      "https://raw.githubusercontent.com/NVIDIA/k8s-device-plugin/v0.17.0/deployments/static/"
      "nvidia-device-plugin.yml\n",
      ctx.plan.instance.id, PoolNodes(ctx),
      "OFFERING_ID=${OFFERING_ID:-}  # set to buy the Capacity Block offering listed below\n",
      shared ? "EFS_FILE_SYSTEM_ID=${EFS_FILE_SYSTEM_ID:?set EFS_FILE_SYSTEM_ID (EFS in the cluster VPC)}\n"
             : "");
  if (shared) {
    setup += fmt::format(
        "# 4. ReadWriteMany weights volume ({} pods share it): the EFS CSI driver and StorageClass {}.\n"
        "aws eks create-addon --cluster-name \"$CLUSTER\" --addon-name aws-efs-csi-driver || true\n"
        "kubectl apply -f - <<EOF\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: {}\n"
        "provisioner: efs.csi.aws.com\nparameters:\n  provisioningMode: efs-ap\n"
        "  fileSystemId: $EFS_FILE_SYSTEM_ID\n  directoryPerms: \"700\"\nEOF\n",
        PoolNodes(ctx), kEksSharedStorageClass, kEksSharedStorageClass);
  }
  setup += GatewaySetup(ctx);
  std::string cleanup = CleanupHeader(ctx);
  cleanup += KubectlDeletes(ctx, manifest);
  if (shared) {
    cleanup += std::string("run \"StorageClass ") + kEksSharedStorageClass +
               "\" kubectl delete storageclass " + kEksSharedStorageClass + " --ignore-not-found\n";
  }
  cleanup +=
      "# Node groups, the cluster and the EFS file system belong to the Terraform that created them:\n"
      "# run `terraform destroy` there.\n";
  cleanup +=
      CleanupSummary({"the Capacity Block (cannot be cancelled; bills until its end date)",
                      "node groups / cluster / EFS until terraform destroy runs where they were created"});
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

// CPU-only plans: an on-demand pool of the planned instance; no GPU taint, device plugin, reservation or
// Capacity Block (the workload selects node.kubernetes.io/instance-type).
constexpr const char* kCpuPool = "k3cpupool";  // AKS pool names: lowercase letters and digits, <= 12

std::vector<RenderedFile> AzureCpuScripts(const RenderContext& ctx, const std::string& manifest) {
  std::string setup = Header(ctx, "AKS cluster and CPU node pool");
  setup += fmt::format(
      "RESOURCE_GROUP=${{RESOURCE_GROUP:-rg-{0}}}\nLOCATION=${{LOCATION:?set LOCATION to a region with "
      "{3}}}\n"
      "CLUSTER=${{CLUSTER:-aks-{0}}}\n\n"
      "# Quota first: {1} vCPUs of the {3} family for {2} VMs (Quotas > Compute).\n\n"
      "az group create --name \"$RESOURCE_GROUP\" --location \"$LOCATION\"\n\n"
      "az aks create \\\n  --resource-group \"$RESOURCE_GROUP\" \\\n  --name \"$CLUSTER\" \\\n  --node-count "
      "2 \\\n"
      "  --node-vm-size Standard_D8s_v5 \\\n  --enable-managed-identity \\\n{5}  --generate-ssh-keys\n\n"
      "# CPU node pool: {2} x {3} (k3 ranks, one per NUMA node).\n"
      "az aks nodepool add \\\n  --resource-group \"$RESOURCE_GROUP\" \\\n  --cluster-name \"$CLUSTER\" \\\n"
      "  --name {4} \\\n  --node-count {2} \\\n  --node-vm-size {3}\n\n"
      "az aks get-credentials --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\"\n",
      ctx.app_name, ctx.plan.instance.vcpu * PoolNodes(ctx), PoolNodes(ctx), ctx.plan.instance.id, kCpuPool,
      UsesWorkloadIdentity(ctx) ? "  --enable-oidc-issuer \\\n  --enable-workload-identity \\\n" : "");
  setup += WorkloadIdentitySetup(ctx);
  setup += GatewaySetup(ctx);
  std::string cleanup = CleanupHeader(ctx);
  cleanup += fmt::format("RESOURCE_GROUP=${{RESOURCE_GROUP:-rg-{0}}}\nCLUSTER=${{CLUSTER:-aks-{0}}}\n\n",
                         ctx.app_name);
  cleanup += KubectlDeletes(ctx, manifest);
  cleanup += WorkloadIdentityCleanup(ctx);
  cleanup += fmt::format(
      "run \"node pool {0}\" az aks nodepool delete --resource-group \"$RESOURCE_GROUP\" "
      "--cluster-name \"$CLUSTER\" --name {0}\n"
      "run \"AKS cluster $CLUSTER\" az aks delete --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\" "
      "--yes\n"
      "run \"resource group $RESOURCE_GROUP\" az group delete --name \"$RESOURCE_GROUP\" --yes\n",
      kCpuPool);
  cleanup += CleanupSummary({});
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

std::vector<RenderedFile> GcpCpuScripts(const RenderContext& ctx, const std::string& manifest) {
  std::string setup = Header(ctx, "GKE cluster and CPU node pool");
  setup += fmt::format(
      "PROJECT_ID=${{PROJECT_ID:?set PROJECT_ID}}\nREGION=${{REGION:?set REGION}}\nZONE=${{ZONE:?set ZONE "
      "(one offering {2})}}\n"
      "CLUSTER_NAME=${{CLUSTER_NAME:-gke-{0}}}\n{6}\n"
      "# Quota first: {3} vCPUs of {2} in $REGION (IAM & Admin > Quotas).\n\n"
      "gcloud container clusters create \"$CLUSTER_NAME\" \\\n  --project=\"$PROJECT_ID\" \\\n"
      "  --location=\"$REGION\" \\\n  --node-locations=\"$ZONE\" \\\n  --num-nodes=2 \\\n"
      "  --machine-type=e2-standard-8 \\\n  --enable-dataplane-v2 \\\n  --enable-ip-alias{4}\n\n"
      "# CPU node pool: {1} x {2} (k3 ranks, one per NUMA node).\n"
      "gcloud container node-pools create {5} \\\n  --cluster=\"$CLUSTER_NAME\" \\\n"
      "  --project=\"$PROJECT_ID\" \\\n  --location=\"$REGION\" \\\n  --node-locations=\"$ZONE\" \\\n"
      "  --num-nodes={1} \\\n{7}  --machine-type={2}\n\n"
      "gcloud container clusters get-credentials \"$CLUSTER_NAME\" --project=\"$PROJECT_ID\" "
      "--location=\"$REGION\"\n",
      ctx.app_name, PoolNodes(ctx), ctx.plan.instance.id, ctx.plan.instance.vcpu * PoolNodes(ctx),
      GcpClusterFlags(ctx), kCpuPool, GcpGatewayVariables(ctx),
      UsesWorkloadIdentity(ctx) ? "  --workload-metadata=GKE_METADATA \\\n" : "");
  setup += WorkloadIdentitySetup(ctx);
  setup += GatewaySetup(ctx);
  std::string cleanup = CleanupHeader(ctx);
  cleanup += fmt::format(
      "PROJECT_ID=${{PROJECT_ID:?set PROJECT_ID}}\nREGION=${{REGION:?set REGION}}\n"
      "CLUSTER_NAME=${{CLUSTER_NAME:-gke-{0}}}\n\n",
      ctx.app_name);
  cleanup += KubectlDeletes(ctx, manifest);
  cleanup += WorkloadIdentityCleanup(ctx);
  cleanup += fmt::format(
      "run \"node pool {0}\" gcloud container node-pools delete {0} --cluster=\"$CLUSTER_NAME\" "
      "--project=\"$PROJECT_ID\" --location=\"$REGION\" --quiet\n"
      "run \"GKE cluster $CLUSTER_NAME\" gcloud container clusters delete \"$CLUSTER_NAME\" "
      "--project=\"$PROJECT_ID\" --location=\"$REGION\" --quiet\n",
      kCpuPool);
  cleanup += GcpGatewayCleanup(ctx);
  cleanup += CleanupSummary({});
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

std::vector<RenderedFile> EksCpuScripts(const RenderContext& ctx, const std::string& manifest) {
  std::string setup = Header(ctx, "EKS CPU node group");
  const bool shared = ctx.plan.layout.nodes * ctx.max_replicas() > 1;
  const std::string ami =
      ctx.plan.instance.cpu_arch == "arm64" ? "AL2023_ARM_64_STANDARD" : "AL2023_x86_64_STANDARD";
  setup += fmt::format(
      "CLUSTER=${{CLUSTER:?set CLUSTER to the EKS cluster name}}\n"
      "NODE_ROLE_ARN=${{NODE_ROLE_ARN:?set NODE_ROLE_ARN to the IAM role of the cluster node groups}}\n"
      "SUBNETS=${{SUBNETS:?set SUBNETS to the private subnet ids of the cluster, space separated}}\n{3}\n"
      "# The EKS cluster itself (VPC, IAM) comes from the AI on EKS Terraform modules (guide §3.2).\n"
      "aws eks update-kubeconfig --name \"$CLUSTER\"\n"
      "# On-demand managed node group: {1} x {0} (k3 ranks, one per NUMA node; no GPU device plugin).\n"
      "# shellcheck disable=SC2086  # SUBNETS is a list of ids\n"
      "aws eks create-nodegroup --cluster-name \"$CLUSTER\" --nodegroup-name {4} --instance-types {0} "
      "--ami-type {2} --scaling-config minSize={1},maxSize={1},desiredSize={1} --subnets $SUBNETS "
      "--node-role \"$NODE_ROLE_ARN\"\n"
      "aws eks wait nodegroup-active --cluster-name \"$CLUSTER\" --nodegroup-name {4}\n",
      ctx.plan.instance.id, PoolNodes(ctx), ami,
      shared ? "EFS_FILE_SYSTEM_ID=${EFS_FILE_SYSTEM_ID:?set EFS_FILE_SYSTEM_ID (EFS in the cluster VPC)}\n"
             : "",
      kCpuPool);
  if (shared) {
    setup += fmt::format(
        "# ReadWriteMany weights volume ({} pods share it): the EFS CSI driver and StorageClass {}.\n"
        "aws eks create-addon --cluster-name \"$CLUSTER\" --addon-name aws-efs-csi-driver || true\n"
        "kubectl apply -f - <<EOF\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: {}\n"
        "provisioner: efs.csi.aws.com\nparameters:\n  provisioningMode: efs-ap\n"
        "  fileSystemId: $EFS_FILE_SYSTEM_ID\n  directoryPerms: \"700\"\nEOF\n",
        PoolNodes(ctx), kEksSharedStorageClass, kEksSharedStorageClass);
  }
  setup += GatewaySetup(ctx);
  std::string cleanup = CleanupHeader(ctx);
  cleanup += "CLUSTER=${CLUSTER:?set CLUSTER to the EKS cluster name}\n\n";
  cleanup += KubectlDeletes(ctx, manifest);
  if (shared) {
    cleanup += std::string("run \"StorageClass ") + kEksSharedStorageClass +
               "\" kubectl delete storageclass " + kEksSharedStorageClass + " --ignore-not-found\n";
  }
  cleanup += fmt::format(
      "run \"node group {0}\" aws eks delete-nodegroup --cluster-name \"$CLUSTER\" --nodegroup-name {0}\n"
      "# The cluster and the EFS file system belong to the Terraform that created them: run `terraform "
      "destroy` there.\n",
      kCpuPool);
  cleanup += CleanupSummary({"the cluster / EFS until terraform destroy runs where they were created"});
  return {{"setup-cluster.sh", setup}, {"cleanup.sh", cleanup}};
}

// Any Kubernetes (--target k8s): the rendered objects only; the cluster and its nodes are the user's.
RenderedFile K8sCleanup(const RenderContext& ctx, const std::string& manifest) {
  std::string body = KubectlDeletes(ctx, manifest);
  if (!BucketCredentialsEnvFrom(ctx).empty()) {
    body += "run \"Secret " + BucketCredentialsSecret(ctx) + "\" kubectl delete secret " +
            BucketCredentialsSecret(ctx) + KubectlNamespace(ctx) + " --ignore-not-found\n";
  }
  return {"cleanup.sh",
          CleanupHeader(ctx) + body + CleanupSummary({"the cluster and its nodes (not created here)"})};
}

}  // namespace

RenderedFile CleanupScript(const RenderContext& ctx, const std::string& body,
                           const std::vector<std::string>& still_billing) {
  return {"cleanup.sh", CleanupHeader(ctx) + body + CleanupSummary(still_billing)};
}

std::vector<RenderedFile> ClusterScripts(const RenderContext& ctx, const std::string& manifest_file) {
  const std::string& t = ctx.plan.target.id;
  if (ctx.plan.instance.CpuOnly()) {
    if (t == "azure-aks") return AzureCpuScripts(ctx, manifest_file);
    if (t == "gcp-gke") return GcpCpuScripts(ctx, manifest_file);
    if (t == "aws-eks") return EksCpuScripts(ctx, manifest_file);
    return {K8sCleanup(ctx, manifest_file)};
  }
  if (t == "azure-aks") return AzureScripts(ctx, manifest_file);
  if (t == "gcp-gke") return GcpScripts(ctx, manifest_file);
  if (t == "aws-eks") return EksScripts(ctx, manifest_file);
  return {K8sCleanup(ctx, manifest_file)};
}

}  // namespace k3::deploy
