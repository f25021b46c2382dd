// AssumeRoleWithWebIdentity (aws_web_identity.h): one form POST through libcurl, a few retries on
// transport errors and 5xx, the XML reply through xml_tree.h.
#include "src/storage/aws_web_identity.h"

#include <curl/curl.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "src/base/curl_transport.h"
#include "src/base/file.h"
#include "src/storage/xml_tree.h"

namespace k3::storage {
namespace {

constexpr int kAttempts = 3;

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

std::string FormEncode(CURL* curl, const std::string& value) {
  char* escaped = curl_easy_escape(curl, value.c_str(), static_cast<int>(value.size()));
  std::string out = escaped == nullptr ? std::string() : std::string(escaped);
  curl_free(escaped);
  return out;
}

std::string StsEndpoint(const EnvLookup& env) {
  if (auto url = env("AWS_ENDPOINT_URL_STS")) return *url;
  if (auto url = env("AWS_ENDPOINT_URL")) return *url;
  const std::string region = env("AWS_REGION").value_or(env("AWS_DEFAULT_REGION").value_or("us-east-1"));
  return "https://sts." + region + ".amazonaws.com";
}

}  // namespace

Result<AwsCredentials> ParseAssumeRoleReply(std::string_view xml, long status, const std::string& source) {
  auto root = ParseXml(xml, "STS AssumeRoleWithWebIdentity reply");
  if (status < 200 || status >= 300) {
    std::string code, message;
    if (root.ok()) {
      const XmlElement* error = (*root)->name == "Error" ? root->get() : (*root)->Child("Error");
      if (error != nullptr) code = error->ChildText("Code"), message = error->ChildText("Message");
    }
    return InvalidArgument("{}: STS AssumeRoleWithWebIdentity answered HTTP {}{}{}", source, status,
                           code.empty() ? "" : " " + code, message.empty() ? "" : ": " + message);
  }
  if (!root.ok()) return root.status().WithPrefix(source);
  const XmlElement* result = (*root)->Child("AssumeRoleWithWebIdentityResult");
  const XmlElement* creds = result == nullptr ? nullptr : result->Child("Credentials");
  if (creds == nullptr) return Internal("{}: the STS reply has no Credentials element", source);
  AwsCredentials out;
  out.access_key_id = creds->ChildText("AccessKeyId");
  out.secret_access_key = creds->ChildText("SecretAccessKey");
  out.session_token = creds->ChildText("SessionToken");
  out.source = source;
  if (out.access_key_id.empty() || out.secret_access_key.empty() || out.session_token.empty())
    return Internal("{}: the STS reply lacks AccessKeyId, SecretAccessKey or SessionToken", source);
  return out;
}

Result<AwsCredentials> AssumeRoleWithWebIdentity(const EnvLookup& env) {
  const auto token_file = env("AWS_WEB_IDENTITY_TOKEN_FILE");
  const auto role_arn = env("AWS_ROLE_ARN");
  if (!token_file || !role_arn)
    return NotFound("AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set");
  const std::string endpoint = StsEndpoint(env);
  const std::string source =
      fmt::format("web identity (role {}, token file {}, STS {})", *role_arn, *token_file, endpoint);
  auto token = ReadFileToString(*token_file);
  if (!token.ok()) return token.status().WithPrefix(source);
  while (!token->empty() && (token->back() == '\n' || token->back() == '\r')) token->pop_back();
  if (token->empty()) return InvalidArgument("{}: the token file is empty", source);
  const std::string session = env("AWS_ROLE_SESSION_NAME").value_or(fmt::format("k3-{}", ::getpid()));

  EnsureCurlInitialized();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Internal("{}: curl_easy_init failed", source);
  const std::string form =
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&DurationSeconds=3600&RoleArn=" +
      FormEncode(curl, *role_arn) + "&RoleSessionName=" + FormEncode(curl, session) +
      "&WebIdentityToken=" + FormEncode(curl, *token);
  Status last;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    std::string body;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_reset(curl);
    struct curl_slist* headers = curl_slist_append(nullptr, "Accept: application/xml");
    curl_easy_setopt(curl, CURLOPT_URL, (endpoint + "/").c_str());
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
      return ParseAssumeRoleReply(body, status, source);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last = code != CURLE_OK ? TransportError(code, errbuf, endpoint, elapsed)
                            : ParseAssumeRoleReply(body, status, source).status();
    if (attempt < kAttempts) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
  }
  curl_easy_cleanup(curl);
  return last.WithPrefix(fmt::format("{} (after {} attempts)", source, kAttempts));
}

}  // namespace k3::storage
