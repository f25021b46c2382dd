// AWS credentials for S3Store, found the way the AWS CLI and SDKs look for them:
//   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
//   2. shared credentials file: $AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, section
//      [$AWS_PROFILE] (default "default")
//   3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, as EKS pods get it, exchanged with STS
//      (aws_web_identity.h)
//   4. container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI (EKS Pod Identity, ECS)
//   5. EC2 instance metadata (IMDSv2), unless AWS_EC2_METADATA_DISABLED=true (aws_metadata_credentials.h)
// `source` says where the keys came from ("env AWS_ACCESS_KEY_ID", "shared credentials file
// /root/.aws/credentials [default]") for error messages; the secret never leaves this struct except
// into the request signer.
#pragma once

#include <optional>
#include <string>

#include "src/base/status.h"
#include "src/storage/credential_expiry.h"
#include "src/storage/environment.h"

namespace k3::storage {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty for long-term keys
  std::string source;         // where they came from, for messages
  // Temporary credentials (STS, metadata services): when they stop working. Unset for long-term keys.
  std::optional<WallClock::time_point> expiration;
};

Result<AwsCredentials> ResolveAwsCredentials(const EnvLookup& env);

// Parses one [profile] of an AWS shared credentials file (INI: "key = value" lines, '#' / ';' comments).
// NotFound when the section or its keys are missing; `path` names the file in messages.
Result<AwsCredentials> ParseAwsCredentialsFile(const std::string& text, const std::string& profile,
                                               const std::string& path);

}  // namespace k3::storage
