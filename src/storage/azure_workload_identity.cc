// ExchangeFederatedToken (azure_workload_identity.h): one form POST (form_post.h), the JSON reply through
// nlohmann::json.
#include "src/storage/azure_workload_identity.h"

#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/storage/form_post.h"
#include "src/storage/percent_encoding.h"

namespace k3::storage {
namespace {

constexpr int kAttempts = 3;
constexpr const char* kStorageScope = "https://storage.azure.com/.default";

}  // namespace

Result<OAuthTokenReply> ParseTokenReply(std::string_view text, long status, const std::string& source,
                                        WallClock::time_point now) {
  const nlohmann::json reply = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (status < 200 || status >= 300) {
    std::string error, description;
    if (reply.is_object()) {
      if (reply.contains("error") && reply["error"].is_string()) error = reply["error"].get<std::string>();
      if (reply.contains("error_description") && reply["error_description"].is_string()) {
        description = reply["error_description"].get<std::string>();
        description = description.substr(0, std::min<size_t>(description.find_first_of("\r\n"), 300));
      }
    }
    return InvalidArgument("{}: the token endpoint answered HTTP {}{}{}", source, status,
                           error.empty() ? "" : " " + error, description.empty() ? "" : ": " + description);
  }
  if (!reply.is_object() || !reply.contains("access_token") || !reply["access_token"].is_string() ||
      reply["access_token"].get<std::string>().empty()) {
    return DataLoss("{}: the token endpoint's reply has no access_token", source);
  }
  return OAuthTokenReply{reply["access_token"].get<std::string>(), ExpiryFromExpiresIn(reply, now)};
}

Result<AzureBearerToken> ExchangeFederatedToken(const EnvLookup& env) {
  const auto token_file = env("AZURE_FEDERATED_TOKEN_FILE");
  const auto client_id = env("AZURE_CLIENT_ID");
  const auto tenant_id = env("AZURE_TENANT_ID");
  if (!token_file) return NotFound("AZURE_FEDERATED_TOKEN_FILE is not set");
  std::string authority = env("AZURE_AUTHORITY_HOST").value_or("https://login.microsoftonline.com/");
  while (!authority.empty() && authority.back() == '/') authority.pop_back();
  const std::string source =
      fmt::format("workload identity (client {}, tenant {}, token file {}, authority {})",
                  client_id.value_or("?"), tenant_id.value_or("?"), *token_file, authority);
  if (!client_id || !tenant_id) {
    return InvalidArgument(
        "{}: AZURE_CLIENT_ID and AZURE_TENANT_ID must be set with AZURE_FEDERATED_TOKEN_FILE", source);
  }
  auto token = ReadFileToString(*token_file);
  if (!token.ok()) return token.status().WithPrefix(source);
  while (!token->empty() && (token->back() == '\n' || token->back() == '\r')) token->pop_back();
  if (token->empty()) return InvalidArgument("{}: the token file is empty", source);

  const std::string url = authority + "/" + *tenant_id + "/oauth2/v2.0/token";
  const std::string form = "client_id=" + PercentEncode(*client_id, false) +
                           "&scope=" + PercentEncode(kStorageScope, false) +
                           "&grant_type=client_credentials&client_assertion_type=" +
                           PercentEncode("urn:ietf:params:oauth:client-assertion-type:jwt-bearer", false) +
                           "&client_assertion=" + PercentEncode(*token, false);
  auto reply = PostForm(url, form, "application/json", kAttempts);
  if (!reply.ok()) return reply.status().WithPrefix(fmt::format("{} (after {} attempts)", source, kAttempts));
  K3_ASSIGN_OR_RETURN(OAuthTokenReply reply_token, ParseTokenReply(reply->body, reply->status, source));
  return AzureBearerToken{std::move(reply_token.access_token), source};
}

}  // namespace k3::storage
