// AssumeRoleWithWebIdentity (aws_web_identity.h): one form POST (form_post.h), the XML reply through
// xml_tree.h.
#include "src/storage/aws_web_identity.h"

#include <unistd.h>

#include <fmt/format.h>

#include "src/base/file.h"
#include "src/storage/form_post.h"
#include "src/storage/percent_encoding.h"
#include "src/storage/xml_tree.h"

namespace k3::storage {
namespace {

constexpr int kAttempts = 3;

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
  out.expiration = ParseIso8601Utc(creds->ChildText("Expiration"));
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

  const std::string form =
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&DurationSeconds=3600&RoleArn=" +
      PercentEncode(*role_arn, false) + "&RoleSessionName=" + PercentEncode(session, false) +
      "&WebIdentityToken=" + PercentEncode(*token, false);
  auto reply = PostForm(endpoint + "/", form, "application/xml", kAttempts);
  if (!reply.ok()) return reply.status().WithPrefix(fmt::format("{} (after {} attempts)", source, kAttempts));
  return ParseAssumeRoleReply(reply->body, reply->status, source);
}

}  // namespace k3::storage
