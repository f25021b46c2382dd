// Web identity credentials (step 3 of the AWS chain, aws_credentials.h): what EKS gives a pod whose
// service account has an IAM role (IRSA): AWS_WEB_IDENTITY_TOKEN_FILE (a projected OIDC token) and
// AWS_ROLE_ARN. The token is exchanged for temporary keys with STS AssumeRoleWithWebIdentity, an
// unsigned POST to the regional STS endpoint (https://sts.REGION.amazonaws.com, or AWS_ENDPOINT_URL_STS /
// AWS_ENDPOINT_URL as the AWS SDKs read them). The token and the keys never appear in messages.
//
// The keys last DurationSeconds (3600); they are not refreshed: a transfer that outlives them fails with
// S3's ExpiredToken error and a rerun resumes it.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/storage/aws_credentials.h"
#include "src/storage/environment.h"

namespace k3::storage {

// Calls STS when AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are set (AWS_ROLE_SESSION_NAME optional).
Result<AwsCredentials> AssumeRoleWithWebIdentity(const EnvLookup& env);

// The credentials in an AssumeRoleWithWebIdentity reply, or the error an STS ErrorResponse carries.
// `source` is recorded in the credentials; `status` is the HTTP status.
Result<AwsCredentials> ParseAssumeRoleReply(std::string_view xml, long status, const std::string& source);

}  // namespace k3::storage
