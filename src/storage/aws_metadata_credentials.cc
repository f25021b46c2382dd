// Container and EC2 instance-metadata credentials (aws_metadata_credentials.h): a few requests through
// SendCredentialRequest (form_post.h), JSON replies through nlohmann::json.
#include "src/storage/aws_metadata_credentials.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/storage/form_post.h"

namespace k3::storage {
namespace {

constexpr const char* kEcsHost = "http://169.254.170.2";
constexpr const char* kImdsHost = "http://169.254.169.254";
constexpr const char* kImdsCredentialsPath = "/latest/meta-data/iam/security-credentials/";

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

// The first line of a reply body, at most 200 characters, for messages (metadata replies carry no
// secrets when they are errors).
std::string FirstLine(const std::string& body) {
  std::string line = body.substr(0, body.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

// A metadata request: one attempt with short timeouts (nothing may answer off the cloud).
CredentialRequest MetadataRequest(std::string method, std::string url, std::vector<std::string> headers,
                                  int attempts) {
  CredentialRequest request;
  request.method = std::move(method);
  request.url = std::move(url);
  request.headers = std::move(headers);
  request.attempts = attempts;
  request.connect_timeout_ms = 1'000;
  request.timeout_ms = 5'000;
  return request;
}

}  // namespace

Result<AwsCredentials> ParseMetadataCredentials(std::string_view json, const std::string& source) {
  const nlohmann::json reply = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return InvalidArgument("{}: the reply is not a JSON object", source);
  auto text = [&](const char* name) {
    auto it = reply.find(name);
    return it != reply.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (const std::string code = text("Code"); !code.empty() && code != "Success") {
    return InvalidArgument("{}: the metadata service answered Code {}{}", source, code,
                           text("Message").empty() ? "" : ": " + FirstLine(text("Message")));
  }
  AwsCredentials creds{text("AccessKeyId"), text("SecretAccessKey"), text("Token"), source,
                       ParseIso8601Utc(text("Expiration"))};
  if (creds.access_key_id.empty() || creds.secret_access_key.empty()) {
    return InvalidArgument("{}: the reply lacks AccessKeyId or SecretAccessKey", source);
  }
  return creds;
}

std::optional<Result<AwsCredentials>> FetchContainerCredentials(const EnvLookup& env) {
  std::string url;
  if (auto full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
    url = *full;
  } else if (auto relative = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    url = std::string(kEcsHost) + *relative;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> headers;
  std::string token_from = "";
  if (auto token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
    headers.push_back("Authorization: " + *token);
    token_from = ", token from env AWS_CONTAINER_AUTHORIZATION_TOKEN";
  } else if (auto file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
    auto token = ReadFileToString(*file);
    if (!token.ok()) {
      return Result<AwsCredentials>(
          NotFound("container credentials: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {} cannot be read: {}",
                   *file, token.status().message()));
    }
    headers.push_back("Authorization: " + Trimmed(*token));
    token_from = ", token file " + *file;
  }
  const std::string source = "container credentials (" + url + token_from + ")";
  auto reply = SendCredentialRequest(MetadataRequest("GET", url, headers, 3));
  if (!reply.ok()) return Result<AwsCredentials>(reply.status().WithPrefix(source));
  if (reply->status != 200) {
    return Result<AwsCredentials>(
        InvalidArgument("{}: HTTP {}: {}", source, reply->status, FirstLine(reply->body)));
  }
  return ParseMetadataCredentials(reply->body, source);
}

Result<AwsCredentials> FetchInstanceMetadataCredentials(const EnvLookup& env) {
  if (auto disabled = env("AWS_EC2_METADATA_DISABLED");
      disabled && (*disabled == "true" || *disabled == "1")) {
    return NotFound("EC2 instance metadata: disabled by AWS_EC2_METADATA_DISABLED");
  }
  std::string host = env("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or(kImdsHost);
  while (!host.empty() && host.back() == '/') host.pop_back();
  const std::string source = "EC2 instance metadata (IMDSv2 at " + host + ")";
  auto token = SendCredentialRequest(
      MetadataRequest("PUT", host + "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds: 21600"}, 1));
  if (!token.ok()) return NotFound("{}: unreachable ({})", source, token.status().message());
  if (token->status != 200) {
    return NotFound("{}: the session token request answered HTTP {} (IMDSv1 is not used)", source,
                    token->status);
  }
  const std::string session = "X-aws-ec2-metadata-token: " + Trimmed(token->body);
  auto role = SendCredentialRequest(MetadataRequest("GET", host + kImdsCredentialsPath, {session}, 3));
  if (!role.ok()) return role.status().WithPrefix(source);
  if (role->status == 404) return NotFound("{}: the instance has no IAM role (instance profile)", source);
  const std::string role_name = Trimmed(role->body.substr(0, role->body.find('\n')));
  if (role->status != 200 || role_name.empty() || role_name.find('/') != std::string::npos) {
    return InvalidArgument("{}: the role name request answered HTTP {}: {}", source, role->status,
                           FirstLine(role->body));
  }
  const std::string role_source =
      fmt::format("EC2 instance metadata (IMDSv2 at {}, role {})", host, role_name);
  auto creds =
      SendCredentialRequest(MetadataRequest("GET", host + kImdsCredentialsPath + role_name, {session}, 3));
  if (!creds.ok()) return creds.status().WithPrefix(role_source);
  if (creds->status != 200) {
    return InvalidArgument("{}: HTTP {}: {}", role_source, creds->status, FirstLine(creds->body));
  }
  return ParseMetadataCredentials(creds->body, role_source);
}

}  // namespace k3::storage
