// Workload identities for bucket weights (see render_identity.h). Facts: Microsoft Learn "Use Microsoft
// Entra Workload ID with AKS" (--enable-oidc-issuer --enable-workload-identity, federated credential with
// audience api://AzureADTokenExchange, ServiceAccount annotation azure.workload.identity/client-id, pod
// label azure.workload.identity/use); Google Cloud "Authenticate to Google Cloud APIs from GKE workloads"
// (--workload-pool=PROJECT_ID.svc.id.goog, --workload-metadata=GKE_METADATA, principal://... member).
#include "src/deploy/render_identity.h"

#include "src/deploy/render_k8s_common.h"

namespace k3::deploy {
namespace {

std::string Ns(const RenderContext& ctx) {
  return ctx.options.name_space.empty() ? "default" : ctx.options.name_space;
}

// The ServiceAccount, applied by setup-cluster.sh once its annotation's value is known.
std::string ServiceAccountApply(const RenderContext& ctx, const std::string& annotation) {
  std::string s = "kubectl apply -f - <<EOF\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " +
                  WorkloadServiceAccount(ctx) + "\n  namespace: " + Ns(ctx) + "\n";
  if (!annotation.empty()) s += "  annotations:\n    " + annotation + "\n";
  return s + "EOF\n";
}

}  // namespace

bool UsesWorkloadIdentity(const RenderContext& ctx) {
  const std::string& t = ctx.plan.target.id;
  return ctx.stream_weights &&
         ((t == "azure-aks" && ctx.weights.scheme == "az") || (t == "gcp-gke" && ctx.weights.scheme == "gs"));
}

std::string WorkloadServiceAccount(const RenderContext& ctx) { return ctx.app_name; }

void AddWorkloadIdentity(const RenderContext& ctx, Doc& pod_spec, Doc& pod_labels) {
  if (!UsesWorkloadIdentity(ctx)) return;
  pod_spec["serviceAccountName"] = WorkloadServiceAccount(ctx);
  if (ctx.plan.target.id == "azure-aks") pod_labels["azure.workload.identity/use"] = "true";
}

std::string WorkloadIdentitySetup(const RenderContext& ctx) {
  if (!UsesWorkloadIdentity(ctx)) return "";
  const std::string sa = WorkloadServiceAccount(ctx);
  // The k3 engine's Job writes the bucket; vLLM only reads it.
  const bool writes = ctx.options.engine == Engine::kK3;
  std::string s;
  if (!ctx.options.name_space.empty()) s += "kubectl apply -f namespace.yaml\n";
  if (ctx.plan.target.id == "azure-aks") {
    s += fmt::format(
        "\n# Workload identity for az://{0}/...: a user-assigned identity with {1} on the storage\n"
        "# account, federated with the pods' ServiceAccount {2}/{3}.\n"
        "az identity create --name \"id-{3}-weights\" --resource-group \"$RESOURCE_GROUP\" --location "
        "\"$LOCATION\"\n"
        "CLIENT_ID=$(az identity show --name \"id-{3}-weights\" --resource-group \"$RESOURCE_GROUP\" --query "
        "clientId --output tsv)\n"
        "PRINCIPAL_ID=$(az identity show --name \"id-{3}-weights\" --resource-group \"$RESOURCE_GROUP\" "
        "--query principalId --output tsv)\n"
        "STORAGE_ID=$(az storage account show --name {0} --query id --output tsv)\n"
        "az role assignment create --assignee-object-id \"$PRINCIPAL_ID\" --assignee-principal-type "
        "ServicePrincipal --role \"{1}\" --scope \"$STORAGE_ID\"\n"
        "ISSUER=$(az aks show --resource-group \"$RESOURCE_GROUP\" --name \"$CLUSTER\" --query "
        "oidcIssuerProfile.issuerUrl --output tsv)\n"
        "az identity federated-credential create --name {3} --identity-name \"id-{3}-weights\" "
        "--resource-group \"$RESOURCE_GROUP\" --issuer \"$ISSUER\" --subject "
        "system:serviceaccount:{2}:{3} --audiences api://AzureADTokenExchange\n",
        ctx.weights.account, writes ? "Storage Blob Data Contributor" : "Storage Blob Data Reader", Ns(ctx),
        sa);
    s += ServiceAccountApply(ctx, "azure.workload.identity/client-id: \"$CLIENT_ID\"");
  } else {
    s += fmt::format(
        "\n# Workload Identity Federation for gs://{0}: the pods' ServiceAccount {1}/{2} gets {3} on the\n"
        "# bucket (no Google service account, no key).\n"
        "PROJECT_NUMBER=$(gcloud projects describe \"$PROJECT_ID\" --format='value(projectNumber)')\n"
        "gcloud storage buckets add-iam-policy-binding gs://{0} --role={3} "
        "--member=\"principal://iam.googleapis.com/projects/$PROJECT_NUMBER/locations/global/"
        "workloadIdentityPools/$PROJECT_ID.svc.id.goog/subject/ns/{1}/sa/{2}\"\n",
        ctx.weights.bucket, Ns(ctx), sa, writes ? "roles/storage.objectUser" : "roles/storage.objectViewer");
    s += ServiceAccountApply(ctx, "");
  }
  return s;
}

std::string WorkloadIdentityCleanup(const RenderContext& ctx) {
  if (!UsesWorkloadIdentity(ctx)) return "";
  const std::string sa = WorkloadServiceAccount(ctx);
  std::string s = "run \"ServiceAccount " + sa + "\" kubectl delete serviceaccount " + sa + " --namespace " +
                  Ns(ctx) + " --ignore-not-found\n";
  if (ctx.plan.target.id == "azure-aks") {
    s += "run \"identity id-" + sa +
         "-weights (its federated credential and role assignment)\" az identity "
         "delete --name \"id-" +
         sa + "-weights\" --resource-group \"$RESOURCE_GROUP\"\n";
  } else {
    const std::string role =
        ctx.options.engine == Engine::kK3 ? "roles/storage.objectUser" : "roles/storage.objectViewer";
    s += "PROJECT_NUMBER=$(gcloud projects describe \"$PROJECT_ID\" --format='value(projectNumber)')\n"
         "run \"bucket IAM binding of " +
         sa + "\" gcloud storage buckets remove-iam-policy-binding gs://" + ctx.weights.bucket +
         " --role=" + role +
         " --member=\"principal://iam.googleapis.com/projects/$PROJECT_NUMBER/locations/global/"
         "workloadIdentityPools/$PROJECT_ID.svc.id.goog/subject/ns/" +
         Ns(ctx) + "/sa/" + sa + "\"\n";
  }
  return s;
}

}  // namespace k3::deploy
