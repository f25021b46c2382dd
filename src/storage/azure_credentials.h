// Where an az://ACCOUNT/CONTAINER/prefix store is and how requests to it are authorised, resolved from
// the environment the way the Azure CLI reads it:
//   1. AZURE_STORAGE_CONNECTION_STRING: "BlobEndpoint=...;AccountName=...;AccountKey=..." (azurite and
//      the portal give these), or SharedAccessSignature=..., or UseDevelopmentStorage=true (azurite's
//      well-known dev account on http://127.0.0.1:10000). Its AccountName must be the URI's account.
//   2. AZURE_STORAGE_KEY: Shared Key of the URI's account (Base64, as the portal shows it).
//   3. AZURE_STORAGE_SAS_TOKEN: a SAS token ("sv=...&sig=...", with or without '?'), appended to URLs.
//   4. AZURE_FEDERATED_TOKEN_FILE + AZURE_CLIENT_ID + AZURE_TENANT_ID (AKS workload identity): exchanged
//      for an OAuth access token (azure_workload_identity.h), sent as "Authorization: Bearer".
//   5. K3_AZURE_MANAGED_IDENTITY=1: the VM's (or AKS kubelet's) managed identity from the instance
//      metadata service (azure_managed_identity.h), AZURE_CLIENT_ID for a user-assigned one; Bearer too.
//   6. otherwise anonymous (public containers).
// Endpoint: AZURE_STORAGE_ENDPOINT, else the connection string's BlobEndpoint (or its
// DefaultEndpointsProtocol + EndpointSuffix), else https://ACCOUNT.blob.core.windows.net. A path-style
// endpoint carries the account in its path (azurite: http://127.0.0.1:PORT/devstoreaccount1).
//
// `source` names where the credentials came from ("env AZURE_STORAGE_KEY") for messages; the key and the
// SAS signature (and an access token) never leave this struct except into the request signer, the URL and
// the Authorization header.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/storage/environment.h"

namespace k3::storage {

enum class AzureAuthKind { kSharedKey, kSas, kBearer, kAnonymous };

struct AzureCredentials {
  AzureAuthKind kind = AzureAuthKind::kAnonymous;
  std::string decoded_key;   // kSharedKey: the account key's bytes
  std::string sas_token;     // kSas: the query string, without a leading '?'
  std::string bearer_token;  // kBearer: an OAuth access token for https://storage.azure.com
  std::string source;        // for messages
};

struct AzureAccess {
  std::string
      endpoint;  // "https://acct.blob.core.windows.net" or "http://127.0.0.1:10000/acct"; no '/' at the end
  AzureCredentials credentials;
};

// azurite's development account (public, documented by Microsoft; never a production secret).
inline constexpr std::string_view kAzuriteAccount = "devstoreaccount1";
inline constexpr std::string_view kAzuriteAccountKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

// Resolves the endpoint and credentials of `account` (the URI's) from the environment.
Result<AzureAccess> ResolveAzureAccess(std::string_view account, const EnvLookup& env);

// "Key=Value;Key=Value" -> map (keys as written; values may hold '='). InvalidArgument on a part without
// '='; the message never repeats values.
Result<std::map<std::string, std::string>> ParseAzureConnectionString(std::string_view text);

}  // namespace k3::storage
