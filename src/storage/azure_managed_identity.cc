// FetchManagedIdentityToken (azure_managed_identity.h): one GET through SendCredentialRequest, the reply
// through workload identity's ParseTokenReply (the same JSON shape and error fields).
#include "src/storage/azure_managed_identity.h"

#include <fmt/format.h>

#include "src/storage/form_post.h"
#include "src/storage/percent_encoding.h"

namespace k3::storage {

Result<AzureBearerToken> FetchManagedIdentityToken(const EnvLookup& env) {
  std::string host = env("AZURE_POD_IDENTITY_AUTHORITY_HOST").value_or("http://169.254.169.254");
  while (!host.empty() && host.back() == '/') host.pop_back();
  const auto client_id = env("AZURE_CLIENT_ID");
  const std::string source = fmt::format("managed identity ({}, instance metadata at {})",
                                         client_id ? "client " + *client_id : "system-assigned", host);
  CredentialRequest request;
  request.url = host + "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=" +
                PercentEncode("https://storage.azure.com/", false) +
                (client_id ? "&client_id=" + PercentEncode(*client_id, false) : "");
  request.headers = {"Metadata: true", "Accept: application/json"};
  request.connect_timeout_ms = 2'000;
  request.timeout_ms = 10'000;
  auto reply = SendCredentialRequest(request);
  if (!reply.ok()) return reply.status().WithPrefix(source);
  K3_ASSIGN_OR_RETURN(OAuthTokenReply token, ParseTokenReply(reply->body, reply->status, source));
  return AzureBearerToken{std::move(token.access_token), source};
}

}  // namespace k3::storage
