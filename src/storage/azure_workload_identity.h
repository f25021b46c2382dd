// Azure workload identity (what AKS gives a pod whose service account is federated with a Microsoft
// Entra application): AZURE_FEDERATED_TOKEN_FILE (a projected service-account token), AZURE_CLIENT_ID,
// AZURE_TENANT_ID and AZURE_AUTHORITY_HOST (default https://login.microsoftonline.com/). The token is
// exchanged for an OAuth access token to Azure Storage with the client-credentials grant and a JWT client
// assertion:
//   POST AUTHORITY/TENANT/oauth2/v2.0/token
//   client_id=...&scope=https://storage.azure.com/.default&grant_type=client_credentials
//   &client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer&client_assertion=TOKEN
// and requests then carry "Authorization: Bearer ACCESS_TOKEN" (azure_store.h).
//
// The access token lasts about an hour and is not refreshed: a transfer that outlives it fails with a 403
// and a rerun resumes it (as web identity does for S3). Neither token ever appears in messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/storage/credential_expiry.h"
#include "src/storage/environment.h"

namespace k3::storage {

struct AzureBearerToken {
  std::string access_token;
  std::string source;  // "workload identity (client ..., tenant ..., token file ..., authority ...)"
};

// Exchanges the federated token; 3 attempts on transport errors and 5xx.
Result<AzureBearerToken> ExchangeFederatedToken(const EnvLookup& env);

struct OAuthTokenReply {
  std::string access_token;
  std::optional<WallClock::time_point> expiration;  // now + "expires_in", when the reply gives it
};

// The access token of a token endpoint's JSON reply and when it expires, or the error it carries
// ("error" and the first line of "error_description"). `status` is the HTTP status; `source` prefixes
// errors; `now` is when the reply arrived.
Result<OAuthTokenReply> ParseTokenReply(std::string_view json, long status, const std::string& source,
                                        WallClock::time_point now = WallClock::now());

}  // namespace k3::storage
