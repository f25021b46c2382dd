// Azure managed identity: the identity of the VM (or of an AKS node pool's kubelet) a process runs on,
// asked for an OAuth access token to Azure Storage at the instance metadata service:
//   GET http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01
//       &resource=https://storage.azure.com/[&client_id=AZURE_CLIENT_ID]      (header "Metadata: true")
// Opt-in with K3_AZURE_MANAGED_IDENTITY=1 (azure_credentials.h's step 5): off Azure nothing answers, and
// anonymous access to public containers should not wait on that. AZURE_CLIENT_ID picks a user-assigned
// identity; AZURE_POD_IDENTITY_AUTHORITY_HOST overrides the endpoint (as the Azure SDKs read it).
// Like workload identity's, the token lasts about an hour and is not refreshed; it never appears in
// messages.
#pragma once

#include "src/base/status.h"
#include "src/storage/azure_workload_identity.h"
#include "src/storage/environment.h"

namespace k3::storage {

// 3 attempts on transport errors and 5xx (IMDS answers 429/5xx while a new identity propagates).
Result<AzureBearerToken> FetchManagedIdentityToken(const EnvLookup& env);

}  // namespace k3::storage
