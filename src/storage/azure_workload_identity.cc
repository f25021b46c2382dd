// ExchangeFederatedToken (azure_workload_identity.h): one form POST through libcurl, a few retries on
// transport errors and 5xx, the JSON reply through nlohmann::json.
#include "src/storage/azure_workload_identity.h"

#include <curl/curl.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "src/base/curl_transport.h"
#include "src/base/file.h"

namespace k3::storage {
namespace {

constexpr int kAttempts = 3;
constexpr const char* kStorageScope = "https://storage.azure.com/.default";

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() + size * count > (size_t{1} << 20)) return 0;  // a token reply is a few KiB
  body->append(data, size * count);
  return size * count;
}

std::string FormEncode(CURL* curl, const std::string& value) {
  char* escaped = curl_easy_escape(curl, value.c_str(), static_cast<int>(value.size()));
  std::string out = escaped == nullptr ? std::string() : std::string(escaped);
  curl_free(escaped);
  return out;
}

}  // namespace

Result<std::string> ParseTokenReply(std::string_view text, long status, const std::string& source) {
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
  return reply["access_token"].get<std::string>();
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

  EnsureCurlInitialized();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Internal("{}: curl_easy_init failed", source);
  const std::string url = authority + "/" + *tenant_id + "/oauth2/v2.0/token";
  const std::string form = "client_id=" + FormEncode(curl, *client_id) +
                           "&scope=" + FormEncode(curl, kStorageScope) +
                           "&grant_type=client_credentials&client_assertion_type=" +
                           FormEncode(curl, "urn:ietf:params:oauth:client-assertion-type:jwt-bearer") +
                           "&client_assertion=" + FormEncode(curl, *token);
  Status last;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    std::string body;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_reset(curl);
    struct curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(form.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10'000L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30'000L);
    const auto t0 = std::chrono::steady_clock::now();
    const CURLcode code = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (code == CURLE_OK && status < 500) {
      curl_easy_cleanup(curl);
      K3_ASSIGN_OR_RETURN(std::string access_token, ParseTokenReply(body, status, source));
      return AzureBearerToken{std::move(access_token), source};
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last = code != CURLE_OK ? TransportError(code, errbuf, url, elapsed)
                            : IoError("the token endpoint answered HTTP {}", status);
    if (attempt < kAttempts) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
  }
  curl_easy_cleanup(curl);
  return last.WithPrefix(fmt::format("{} (after {} attempts)", source, kAttempts));
}

}  // namespace k3::storage
