// Credentials from metadata services, each against a loopback stand-in for the service (the cloud's
// boundary, with canned replies): EC2 IMDSv2 (session token, role, keys), container credentials (EKS Pod
// Identity's token file, ECS's relative URI is only a URL), Azure managed identity; their errors name the
// source and never a key or token; an unreachable IMDS ends the AWS chain with NotFound in about a second.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "src/storage/aws_credentials.h"
#include "src/storage/aws_metadata_credentials.h"
#include "src/storage/azure_credentials.h"
#include "src/storage/credential_expiry.h"
#include "src/storage/s3_store.h"
#include "src/storage/testing/canned_http_server.h"
#include "src/storage/testing/fake_env.h"

namespace k3::storage {
namespace {

using testing::CannedHttpServer;
using testing::FakeEnv;

constexpr const char* kKeysJson =
    R"({"Code": "Success", "LastUpdated": "2026-12-04T12:00:00Z", "Type": "AWS-HMAC",
        "AccessKeyId": "ASIAMETA", "SecretAccessKey": "metaSECRET", "Token": "metaTOKEN",
        "Expiration": "2026-12-04T18:00:00Z"})";

TEST(AwsMetadataCredentialsTest, ImdsV2TokenThenRoleThenKeys) {
  CannedHttpServer imds({{200, "SESSION-TOKEN-123"}, {200, "k3-weights-role\n"}, {200, kKeysJson}},
                        "text/plain");
  auto creds = ResolveAwsCredentials(
      FakeEnv({{"HOME", "/nonexistent"}, {"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint() + "/"}}));
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->access_key_id, "ASIAMETA");
  EXPECT_EQ(creds->secret_access_key, "metaSECRET");
  EXPECT_EQ(creds->session_token, "metaTOKEN");
  EXPECT_NE(creds->source.find("role k3-weights-role"), std::string::npos) << creds->source;
  const auto requests = imds.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_TRUE(requests[0].head.starts_with("PUT /latest/api/token HTTP/1.1")) << requests[0].head;
  EXPECT_NE(requests[0].head.find("X-aws-ec2-metadata-token-ttl-seconds: 21600"), std::string::npos);
  EXPECT_TRUE(requests[1].head.starts_with("GET /latest/meta-data/iam/security-credentials/ HTTP/1.1"));
  EXPECT_NE(requests[1].head.find("X-aws-ec2-metadata-token: SESSION-TOKEN-123"), std::string::npos);
  EXPECT_TRUE(requests[2].head.starts_with("GET /latest/meta-data/iam/security-credentials/k3-weights-role "))
      << requests[2].head;
  EXPECT_NE(requests[2].head.find("X-aws-ec2-metadata-token: SESSION-TOKEN-123"), std::string::npos);
}

TEST(AwsMetadataCredentialsTest, InstanceWithoutRoleAndRefusedKeysAreClearErrors) {
  CannedHttpServer no_role({{200, "T"}, {404, "Not Found"}}, "text/plain");
  auto none =
      FetchInstanceMetadataCredentials(FakeEnv({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", no_role.endpoint()}}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("has no IAM role"), std::string::npos) << none.status().ToString();

  CannedHttpServer failing({{200, "T"}, {200, "role"}, {200, R"({"Code": "AssumeRoleUnauthorizedAccess",
      "Message": "EC2 cannot assume the role"})"}},
                           "text/plain");
  auto refused =
      FetchInstanceMetadataCredentials(FakeEnv({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", failing.endpoint()}}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("AssumeRoleUnauthorizedAccess"), std::string::npos);
  EXPECT_NE(refused.status().message().find("role role"), std::string::npos) << refused.status().ToString();
}

TEST(AwsMetadataCredentialsTest, UnreachableOrDisabledMetadataEndsTheChainQuickly) {
  // A loopback port nobody listens on: connection refused at once.
  int port = 0;
  {
    CannedHttpServer closed({}, "text/plain");
    port = std::stoi(closed.endpoint().substr(17));
  }
  const auto start = std::chrono::steady_clock::now();
  auto creds = ResolveAwsCredentials(
      FakeEnv({{"HOME", "/nonexistent"},
               {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:" + std::to_string(port)}}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(creds.ok());
  EXPECT_EQ(creds.status().code(), StatusCode::kNotFound);
  const std::string message = creds.status().message();
  EXPECT_NE(message.find("no AWS credentials found"), std::string::npos) << message;
  EXPECT_NE(message.find("IMDSv2 at http://127.0.0.1:"), std::string::npos) << message;
  EXPECT_NE(message.find("unreachable"), std::string::npos) << message;

  auto disabled =
      ResolveAwsCredentials(FakeEnv({{"HOME", "/nonexistent"}, {"AWS_EC2_METADATA_DISABLED", "true"}}));
  ASSERT_FALSE(disabled.ok());
  EXPECT_NE(disabled.status().message().find("disabled by AWS_EC2_METADATA_DISABLED"), std::string::npos)
      << disabled.status().ToString();
}

TEST(AwsMetadataCredentialsTest, ContainerCredentialsWithPodIdentityTokenFile) {
  const std::string token_path = "/tmp/k3_pod_identity_token_" + std::to_string(::getpid());
  std::ofstream(token_path) << "POD-IDENTITY-TOKEN\n";
  CannedHttpServer agent({{500, "busy"}, {200, kKeysJson}}, "application/json");
  auto creds = ResolveAwsCredentials(
      FakeEnv({{"HOME", "/nonexistent"},
               {"AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.endpoint() + "/v1/credentials"},
               {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_path}}));
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->access_key_id, "ASIAMETA");
  EXPECT_EQ(creds->source.find("POD-IDENTITY-TOKEN"), std::string::npos) << creds->source;
  const auto requests = agent.requests();
  ASSERT_EQ(requests.size(), 2u) << "the 500 is retried";
  EXPECT_TRUE(requests[1].head.starts_with("GET /v1/credentials HTTP/1.1"));
  EXPECT_NE(requests[1].head.find("Authorization: POD-IDENTITY-TOKEN\r\n"), std::string::npos);

  CannedHttpServer denying({{403, R"({"Message": "token invalid"})"}}, "application/json");
  auto denied = FetchContainerCredentials(FakeEnv({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", denying.endpoint()},
                                                   {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "SECRET-TOKEN"}}));
  ASSERT_TRUE(denied.has_value());
  ASSERT_FALSE(denied->ok());
  EXPECT_NE(denied->status().message().find("HTTP 403"), std::string::npos) << denied->status().ToString();
  EXPECT_EQ(denied->status().message().find("SECRET-TOKEN"), std::string::npos)
      << denied->status().ToString();
  EXPECT_FALSE(FetchContainerCredentials(FakeEnv({})).has_value());
  std::filesystem::remove(token_path);
}

// IMDS keys that expire in `minutes`, with session token `token`, in the service's JSON.
std::string KeysExpiringIn(int minutes, const std::string& token) {
  const std::time_t at = WallClock::to_time_t(WallClock::now() + std::chrono::minutes(minutes));
  std::tm tm{};
  ::gmtime_r(&at, &tm);
  char when[32];
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(R"({"Code": "Success", "AccessKeyId": "ASIA)") + token +
         R"(", "SecretAccessKey": "s", )" + R"("Token": ")" + token + R"(", "Expiration": ")" + when +
         R"("})";
}

// Temporary keys are fetched again from the same source before they expire: keys with 2 minutes left
// (inside the 5-minute margin) are renewed before the next request, which signs with the new ones; keys
// with hours left are used as they are.
TEST(AwsMetadataCredentialsTest, S3StoreRenewsTemporaryKeysBeforeTheyExpire) {
  CannedHttpServer imds({{200, "T1"},
                         {200, "role"},
                         {200, KeysExpiringIn(2, "FIRST")},
                         {200, "T2"},
                         {200, "role"},
                         {200, KeysExpiringIn(360, "SECOND")}},
                        "text/plain");
  CannedHttpServer s3({{200, ""}, {200, ""}}, "application/xml");
  auto env = FakeEnv({{"HOME", "/nonexistent"}, {"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.endpoint()}});
  S3Options options;
  options.endpoint = s3.endpoint();
  auto store = S3Store::Create(ParseObjectUri("s3://bucket/prefix").value(), options, env);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(imds.requests().size(), 3u);  // the first keys, at Create
  ASSERT_TRUE((*store)->Stat("a").ok());
  ASSERT_TRUE((*store)->Stat("b").ok());
  EXPECT_EQ(imds.requests().size(), 6u);  // renewed once, before the first request
  const auto requests = s3.requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& r : requests) {
    EXPECT_NE(r.head.find("x-amz-security-token: SECOND"), std::string::npos) << r.head;
    EXPECT_NE(r.head.find("Credential=ASIASECOND/"), std::string::npos) << r.head;
  }
}

TEST(CredentialExpiryTest, ParsesTheFormatsTheServicesWrite) {
  const auto t = ParseIso8601Utc("2026-12-05T03:40:00Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(WallClock::to_time_t(*t), 1796442000);
  EXPECT_EQ(ParseIso8601Utc("2026-12-05T03:40:00.123Z"), t);
  EXPECT_EQ(ParseIso8601Utc("2026-12-05T03:40:00+00:00"), t);
  for (const char* bad : {"", "2026-12-05", "2026-13-05T03:40:00Z", "2026-12-05T03:40:00+02:00", "soon"})
    EXPECT_FALSE(ParseIso8601Utc(bad).has_value()) << bad;
  const WallClock::time_point now = WallClock::from_time_t(1000);
  EXPECT_EQ(ExpiryFromExpiresIn(nlohmann::json::parse(R"({"access_token": "x", "expires_in": 3599})"), now),
            now + std::chrono::seconds(3599));
  EXPECT_EQ(ExpiryFromExpiresIn(nlohmann::json::parse(R"({"expires_in": "86399"})"), now),
            now + std::chrono::seconds(86399));
  EXPECT_FALSE(ExpiryFromExpiresIn(nlohmann::json::parse(R"({"expires_in": -5})"), now).has_value());
  EXPECT_FALSE(ExpiryFromExpiresIn(nlohmann::json::parse("[1]"), now).has_value());
  EXPECT_TRUE(NeedsRenewal(now + std::chrono::minutes(4), now));
  EXPECT_FALSE(NeedsRenewal(now + std::chrono::minutes(6), now));
  EXPECT_FALSE(NeedsRenewal(std::nullopt, now));
}

TEST(AwsMetadataCredentialsTest, ReplyParser) {
  EXPECT_TRUE(ParseMetadataCredentials(kKeysJson, "s").ok());
  EXPECT_FALSE(ParseMetadataCredentials("not json", "s").ok());
  EXPECT_FALSE(ParseMetadataCredentials(R"({"AccessKeyId": "A"})", "s").ok());
  EXPECT_FALSE(ParseMetadataCredentials(R"([1, 2])", "s").ok());
}

constexpr const char* kAzureAccessToken = "eyJ0eXAiOiJKV1QifQ.managed-identity-token.sig";

TEST(AzureManagedIdentityTest, AsksImdsForAStorageTokenWhenOptedIn) {
  CannedHttpServer imds({{200, std::string(R"({"access_token": ")") + kAzureAccessToken +
                                   R"(", "expires_in": "86399", "resource": "https://storage.azure.com/",
                                   "token_type": "Bearer"})"}},
                        "application/json");
  auto access = ResolveAzureAccess("acct", FakeEnv({{"K3_AZURE_MANAGED_IDENTITY", "1"},
                                                    {"AZURE_CLIENT_ID", "client-42"},
                                                    {"AZURE_POD_IDENTITY_AUTHORITY_HOST", imds.endpoint()}}));
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_EQ(access->credentials.kind, AzureAuthKind::kBearer);
  EXPECT_EQ(access->credentials.bearer_token, kAzureAccessToken);
  EXPECT_NE(access->credentials.source.find("managed identity (client client-42"), std::string::npos);
  const auto requests = imds.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_TRUE(requests[0].head.starts_with(
      "GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F"
      "&client_id=client-42 HTTP/1.1"))
      << requests[0].head;
  EXPECT_NE(requests[0].head.find("Metadata: true"), std::string::npos);

  // Without the opt-in the same environment is anonymous and nothing is asked.
  auto anonymous =
      ResolveAzureAccess("acct", FakeEnv({{"AZURE_POD_IDENTITY_AUTHORITY_HOST", imds.endpoint()}}));
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->credentials.kind, AzureAuthKind::kAnonymous);
}

TEST(AzureManagedIdentityTest, ErrorsNameTheIdentityAndTheServiceError) {
  CannedHttpServer imds({{400, R"({"error": "invalid_request", "error_description": "Identity not found"})"}},
                        "application/json");
  auto access = ResolveAzureAccess("acct", FakeEnv({{"K3_AZURE_MANAGED_IDENTITY", "1"},
                                                    {"AZURE_POD_IDENTITY_AUTHORITY_HOST", imds.endpoint()}}));
  ASSERT_FALSE(access.ok());
  const std::string message = access.status().message();
  EXPECT_NE(message.find("managed identity (system-assigned"), std::string::npos) << message;
  EXPECT_NE(message.find("HTTP 400 invalid_request: Identity not found"), std::string::npos) << message;
}

}  // namespace
}  // namespace k3::storage
