// The AWS credential chain (aws_credentials.h).
#include "src/storage/aws_credentials.h"

#include <filesystem>
#include <map>

#include "src/base/file.h"
#include "src/base/text.h"
#include "src/storage/aws_metadata_credentials.h"
#include "src/storage/aws_web_identity.h"

namespace k3::storage {
Result<AwsCredentials> ParseAwsCredentialsFile(const std::string& text, const std::string& profile,
                                               const std::string& path) {
  std::map<std::string, std::string> values;
  bool in_section = false, found_section = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string line = TrimWhitespace(std::string_view(text).substr(pos, eol - pos));
    pos = eol + 1;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      const std::string name = line.back() == ']' ? TrimWhitespace(line.substr(1, line.size() - 2)) : "";
      in_section = name == profile;
      found_section = found_section || in_section;
      continue;
    }
    if (!in_section) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    values[TrimWhitespace(line.substr(0, eq))] = TrimWhitespace(line.substr(eq + 1));
  }
  const std::string source = "shared credentials file " + path + " [" + profile + "]";
  if (!found_section) return NotFound("{} has no [{}] section", path, profile);
  AwsCredentials creds;
  creds.access_key_id = values["aws_access_key_id"];
  creds.secret_access_key = values["aws_secret_access_key"];
  creds.session_token = values["aws_session_token"];
  creds.source = source;
  if (creds.access_key_id.empty() || creds.secret_access_key.empty()) {
    return NotFound("{}: the section needs both aws_access_key_id and aws_secret_access_key", source);
  }
  return creds;
}

Result<AwsCredentials> ResolveAwsCredentials(const EnvLookup& env) {
  const auto key_id = env("AWS_ACCESS_KEY_ID");
  const auto secret = env("AWS_SECRET_ACCESS_KEY");
  if (key_id && secret) {
    return AwsCredentials{*key_id, *secret, env("AWS_SESSION_TOKEN").value_or(""), "env AWS_ACCESS_KEY_ID"};
  }
  if (key_id || secret) {
    return InvalidArgument(
        "the environment sets {} but not {}; set both (or neither, to use the shared "
        "credentials file)",
        key_id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
        key_id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
  }
  const auto profile_env = env("AWS_PROFILE");
  const std::string profile = profile_env.value_or("default");
  std::string path;
  if (auto file = env("AWS_SHARED_CREDENTIALS_FILE")) {
    path = *file;
  } else if (auto home = env("HOME")) {
    path = *home + "/.aws/credentials";
  }
  std::error_code ec;
  if (!path.empty() && std::filesystem::is_regular_file(path, ec)) {
    K3_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
    auto creds = ParseAwsCredentialsFile(text, profile, path);
    // A missing [default] section falls through to the next source; a profile the user named must exist.
    if (creds.ok() || profile_env) return creds;
  } else if (env("AWS_SHARED_CREDENTIALS_FILE")) {
    return NotFound("AWS_SHARED_CREDENTIALS_FILE names {}, which is not a readable file", path);
  }
  if (env("AWS_WEB_IDENTITY_TOKEN_FILE") && env("AWS_ROLE_ARN")) return AssumeRoleWithWebIdentity(env);
  if (std::optional<Result<AwsCredentials>> container = FetchContainerCredentials(env)) return *container;
  auto instance = FetchInstanceMetadataCredentials(env);
  if (instance.ok() || instance.status().code() != StatusCode::kNotFound) return instance;
  return NotFound(
      "no AWS credentials found (looked at: env AWS_ACCESS_KEY_ID, shared credentials file {}{}, web "
      "identity (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN), container credentials "
      "(AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI), {}); set AWS_ACCESS_KEY_ID and "
      "AWS_SECRET_ACCESS_KEY or add the profile to the file; on EKS give the pod a service account with an "
      "IAM role (IRSA or Pod Identity), on EC2 an instance profile",
      path.empty() ? "(no HOME)" : path, " [" + profile + "]", instance.status().message());
}

}  // namespace k3::storage
