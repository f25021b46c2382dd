// AWS credentials from the metadata services a workload runs beside, the last two links of the chain in
// aws_credentials.h (as the AWS SDKs order them):
//   container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity, whose agent also gives
//     AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE) or AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (ECS task roles,
//     below http://169.254.170.2); the Authorization header from AWS_CONTAINER_AUTHORIZATION_TOKEN or the
//     token file. GET -> {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}.
//   EC2 instance metadata, IMDSv2 only: PUT /latest/api/token (a session token for 6 h), then
//     GET /latest/meta-data/iam/security-credentials/ (the role's name) and .../ROLE (the same JSON with
//     "Code": "Success"). Endpoint AWS_EC2_METADATA_SERVICE_ENDPOINT (default http://169.254.169.254);
//     AWS_EC2_METADATA_DISABLED=true skips it. Off EC2 nothing answers: one attempt with a 1 s connect
//     timeout, as the SDKs do, so a machine without credentials learns it in about a second.
// The keys expire (hours); they are not refreshed: a transfer that outlives them fails with a 403 naming
// the source, and a rerun of `k3 weights sync` resumes it. Neither keys nor tokens appear in messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/storage/aws_credentials.h"
#include "src/storage/environment.h"

namespace k3::storage {

// nullopt when neither container-credential variable is set; else the credentials or the error.
std::optional<Result<AwsCredentials>> FetchContainerCredentials(const EnvLookup& env);

// IMDSv2. NotFound when metadata is disabled, unreachable or the instance has no role (the message says
// which); other errors for a service that answers but refuses.
Result<AwsCredentials> FetchInstanceMetadataCredentials(const EnvLookup& env);

// The credentials JSON both services answer with; `source` prefixes errors and becomes creds.source.
Result<AwsCredentials> ParseMetadataCredentials(std::string_view json, const std::string& source);

}  // namespace k3::storage
