// Azure endpoint and credential resolution (azure_credentials.h).
#include "src/storage/azure_credentials.h"

#include "src/storage/azure_managed_identity.h"
#include "src/storage/azure_shared_key.h"
#include "src/storage/azure_workload_identity.h"

namespace k3::storage {
namespace {

std::string TrimSlashes(std::string text) {
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

Result<std::string> DecodeKey(std::string_view key, const std::string& source) {
  auto decoded = Base64Decode(key);
  if (!decoded.ok()) return InvalidArgument("the account key from {} is not Base64", source);
  return std::move(decoded).value();
}

std::string SasQuery(std::string_view token) {
  if (!token.empty() && token.front() == '?') token.remove_prefix(1);
  return std::string(token);
}

}  // namespace

Result<std::map<std::string, std::string>> ParseAzureConnectionString(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  int index = 0;
  while (pos < text.size()) {
    size_t end = text.find(';', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view part = text.substr(pos, end - pos);
    pos = end + 1;
    ++index;
    if (part.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;  // ";;" or a trailing ';'
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgument("part {} of the connection string is not Key=Value", index);
    }
    out[std::string(part.substr(0, eq))] = std::string(part.substr(eq + 1));
  }
  return out;
}

Result<AzureAccess> ResolveAzureAccess(std::string_view account, const EnvLookup& env) {
  AzureAccess access;
  access.endpoint = "https://" + std::string(account) + ".blob.core.windows.net";
  bool have_credentials = false;

  if (auto text = env("AZURE_STORAGE_CONNECTION_STRING")) {
    const std::string source = "env AZURE_STORAGE_CONNECTION_STRING";
    auto parsed = ParseAzureConnectionString(*text);
    if (!parsed.ok()) return parsed.status().WithPrefix(source);
    std::map<std::string, std::string> fields = std::move(parsed).value();
    if (fields["UseDevelopmentStorage"] == "true") {
      fields.try_emplace("AccountName", std::string(kAzuriteAccount));
      fields.try_emplace("AccountKey", std::string(kAzuriteAccountKey));
      fields.try_emplace("BlobEndpoint", "http://127.0.0.1:10000/" + std::string(kAzuriteAccount));
    }
    const std::string& name = fields["AccountName"];
    if (!name.empty() && name != account) {
      return InvalidArgument(
          "{} is for storage account '{}', but the URI names account '{}'; use az://{}/... or the "
          "other account's connection string",
          source, name, account, name);
    }
    if (!fields["BlobEndpoint"].empty()) {
      access.endpoint = TrimSlashes(fields["BlobEndpoint"]);
    } else if (!fields["EndpointSuffix"].empty()) {
      const std::string protocol =
          fields["DefaultEndpointsProtocol"].empty() ? "https" : fields["DefaultEndpointsProtocol"];
      access.endpoint = protocol + "://" + std::string(account) + ".blob." + fields["EndpointSuffix"];
    }
    if (!fields["AccountKey"].empty()) {
      access.credentials.kind = AzureAuthKind::kSharedKey;
      access.credentials.source = source + " (AccountKey)";
      K3_ASSIGN_OR_RETURN(access.credentials.decoded_key, DecodeKey(fields["AccountKey"], source));
      have_credentials = true;
    } else if (!fields["SharedAccessSignature"].empty()) {
      access.credentials.kind = AzureAuthKind::kSas;
      access.credentials.source = source + " (SharedAccessSignature)";
      access.credentials.sas_token = SasQuery(fields["SharedAccessSignature"]);
      have_credentials = true;
    }
  }
  if (!have_credentials) {
    if (auto key = env("AZURE_STORAGE_KEY")) {
      access.credentials.kind = AzureAuthKind::kSharedKey;
      access.credentials.source = "env AZURE_STORAGE_KEY";
      K3_ASSIGN_OR_RETURN(access.credentials.decoded_key, DecodeKey(*key, access.credentials.source));
    } else if (auto sas = env("AZURE_STORAGE_SAS_TOKEN")) {
      access.credentials.kind = AzureAuthKind::kSas;
      access.credentials.source = "env AZURE_STORAGE_SAS_TOKEN";
      access.credentials.sas_token = SasQuery(*sas);
    } else if (env("AZURE_FEDERATED_TOKEN_FILE")) {
      K3_ASSIGN_OR_RETURN(AzureBearerToken token, ExchangeFederatedToken(env));
      access.credentials.kind = AzureAuthKind::kBearer;
      access.credentials.bearer_token = std::move(token.access_token);
      access.credentials.source = std::move(token.source);
    } else if (auto managed = env("K3_AZURE_MANAGED_IDENTITY"); managed && *managed != "0") {
      K3_ASSIGN_OR_RETURN(AzureBearerToken token, FetchManagedIdentityToken(env));
      access.credentials.kind = AzureAuthKind::kBearer;
      access.credentials.bearer_token = std::move(token.access_token);
      access.credentials.source = std::move(token.source);
    } else {
      access.credentials.kind = AzureAuthKind::kAnonymous;
      access.credentials.source =
          "anonymous (none of AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, "
          "AZURE_FEDERATED_TOKEN_FILE, K3_AZURE_MANAGED_IDENTITY is set)";
    }
  }
  if (auto endpoint = env("AZURE_STORAGE_ENDPOINT")) access.endpoint = TrimSlashes(*endpoint);
  if (access.endpoint.find("://") == std::string::npos) {
    return InvalidArgument("az://{}: the blob endpoint '{}' needs a scheme (https:// or http://)", account,
                           access.endpoint);
  }
  return access;
}

}  // namespace k3::storage
