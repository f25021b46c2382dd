// Azure workload identity against a loopback token endpoint (the cloud's boundary): the federated token
// is exchanged for a storage access token (retried on 5xx), AzureStore sends it as a Bearer header, and
// errors name the client, the tenant and the endpoint's error code but never either token.
#include "src/storage/azure_workload_identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "src/storage/azure_credentials.h"
#include "src/storage/azure_store.h"
#include "src/storage/testing/canned_http_server.h"
#include "src/storage/testing/fake_env.h"

namespace k3::storage {
namespace {

using testing::CannedHttpServer;

using testing::FakeEnv;

constexpr const char* kFederatedToken = "eyJhbGciOiJSUzI1NiJ9.federated+payload/odd=.sig";
constexpr const char* kAccessToken = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.storage-access-token.sig";

class FederatedTokenFile {
 public:
  FederatedTokenFile() : path_("/tmp/k3_azure_federated_token_" + std::to_string(::getpid())) {
    std::ofstream(path_) << kFederatedToken << "\n";
  }
  ~FederatedTokenFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::map<std::string, std::string> WorkloadEnv(const std::string& token_file, const std::string& authority) {
  return {{"AZURE_FEDERATED_TOKEN_FILE", token_file},
          {"AZURE_CLIENT_ID", "11111111-2222-3333-4444-555555555555"},
          {"AZURE_TENANT_ID", "tenant-6789"},
          {"AZURE_AUTHORITY_HOST", authority + "/"}};
}

TEST(AzureWorkloadIdentityTest, ExchangesTheFederatedTokenForAStorageToken) {
  FederatedTokenFile file;
  CannedHttpServer entra(
      {{503, R"({"error": "temporarily_unavailable"})"},
       {200, std::string(R"({"token_type": "Bearer", "expires_in": 3599, "access_token": ")") + kAccessToken +
                 "\"}"}},
      "application/json");
  auto access = ResolveAzureAccess("acct", FakeEnv(WorkloadEnv(file.path(), entra.endpoint())));
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_EQ(access->credentials.kind, AzureAuthKind::kBearer);
  EXPECT_EQ(access->credentials.bearer_token, kAccessToken);
  EXPECT_NE(access->credentials.source.find("workload identity (client 11111111-2222-3333-4444-555555555555"),
            std::string::npos)
      << access->credentials.source;
  EXPECT_EQ(access->credentials.source.find(kFederatedToken), std::string::npos);
  EXPECT_EQ(access->endpoint, "https://acct.blob.core.windows.net");

  const std::vector<CannedHttpServer::Request> requests = entra.requests();
  ASSERT_EQ(requests.size(), 2u) << "the 503 is retried";
  EXPECT_TRUE(requests[1].head.starts_with("POST /tenant-6789/oauth2/v2.0/token HTTP/1.1"))
      << requests[1].head;
  const std::string& form = requests[1].body;
  EXPECT_NE(form.find("client_id=11111111-2222-3333-4444-555555555555"), std::string::npos) << form;
  EXPECT_NE(form.find("scope=https%3A%2F%2Fstorage.azure.com%2F.default"), std::string::npos) << form;
  EXPECT_NE(form.find("grant_type=client_credentials"), std::string::npos) << form;
  EXPECT_NE(
      form.find("client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"),
      std::string::npos)
      << form;
  // The token, form-encoded, its trailing newline dropped.
  EXPECT_TRUE(form.ends_with("&client_assertion=eyJhbGciOiJSUzI1NiJ9.federated%2Bpayload%2Fodd%3D.sig"))
      << form;
}

TEST(AzureWorkloadIdentityTest, ErrorsNameClientTenantAndCodeButNeverTheToken) {
  FederatedTokenFile file;
  CannedHttpServer entra(
      {{400, R"({"error": "invalid_client", "error_description": "AADSTS700016: Application )"
             R"(with identifier '1111' was not found.\r\nTrace ID: abc\r\nTimestamp: 2026"})"}},
      "application/json");
  auto access = ResolveAzureAccess("acct", FakeEnv(WorkloadEnv(file.path(), entra.endpoint())));
  ASSERT_FALSE(access.ok());
  const std::string& message = access.status().message();
  EXPECT_NE(message.find("tenant tenant-6789"), std::string::npos) << message;
  EXPECT_NE(message.find("HTTP 400 invalid_client: AADSTS700016"), std::string::npos) << message;
  EXPECT_EQ(message.find("Trace ID"), std::string::npos) << "one line: " << message;
  EXPECT_EQ(message.find(kFederatedToken), std::string::npos) << message;

  auto no_client = ResolveAzureAccess("acct", FakeEnv({{"AZURE_FEDERATED_TOKEN_FILE", file.path()}}));
  ASSERT_FALSE(no_client.ok());
  EXPECT_NE(no_client.status().message().find("AZURE_CLIENT_ID and AZURE_TENANT_ID"), std::string::npos);

  auto no_file = ResolveAzureAccess("acct", FakeEnv(WorkloadEnv("/nonexistent/token", entra.endpoint())));
  ASSERT_FALSE(no_file.ok());
  EXPECT_NE(no_file.status().message().find("/nonexistent/token"), std::string::npos)
      << no_file.status().message();
}

TEST(AzureWorkloadIdentityTest, TokenReplyParser) {
  const WallClock::time_point now = WallClock::from_time_t(1000);
  auto ok = ParseTokenReply(R"({"access_token": "abc", "expires_in": 10})", 200, "src", now);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->access_token, "abc");
  EXPECT_EQ(ok->expiration, now + std::chrono::seconds(10));
  EXPECT_FALSE(ParseTokenReply(R"({"access_token": "abc"})", 200, "src")->expiration.has_value());
  EXPECT_FALSE(ParseTokenReply(R"({"token_type": "Bearer"})", 200, "src").ok());
  EXPECT_FALSE(ParseTokenReply(R"({"access_token": ""})", 200, "src").ok());
  EXPECT_FALSE(ParseTokenReply("not json", 200, "src").ok());
  auto denied = ParseTokenReply("<html>denied</html>", 401, "src");
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("HTTP 401"), std::string::npos);
}

TEST(AzureWorkloadIdentityTest, AzureStoreSendsTheTokenAsBearerAndRedactsItFromErrors) {
  // The blob endpoint: a HEAD answered 200, then a GET answered 403 with a body that echoes the token.
  CannedHttpServer blobs(
      {{200, ""},
       {403, std::string("<?xml version=\"1.0\"?><Error><Code>AuthorizationFailure</Code><Message>"
                         "token ") +
                 kAccessToken + " lacks the Storage Blob Data Reader role</Message></Error>"}},
      "application/xml");
  AzureOptions options;
  options.access = AzureAccess{blobs.endpoint(), {}};
  options.access->credentials.kind = AzureAuthKind::kBearer;
  options.access->credentials.bearer_token = kAccessToken;
  options.access->credentials.source = "workload identity (client c)";
  options.retry.max_attempts = 1;
  auto store = AzureStore::Create(*ParseObjectUri("az://acct/models/kimi"), options);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->Stat("config.json").ok());
  std::vector<uint8_t> dst(10);
  const Status denied = (*store)->ReadRange("config.json", 0, dst);  // a GET: its error body is read
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.message().find("az://acct/models/kimi/config.json: HTTP 403 AuthorizationFailure"),
            std::string::npos)
      << denied.message();
  EXPECT_NE(denied.message().find("[secret] lacks the Storage Blob Data Reader role"), std::string::npos)
      << denied.message();
  EXPECT_NE(denied.message().find("workload identity (client c)"), std::string::npos);
  EXPECT_EQ(denied.message().find(kAccessToken), std::string::npos) << denied.message();

  const std::vector<CannedHttpServer::Request> requests = blobs.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(requests[0].head.starts_with("HEAD /models/kimi/config.json HTTP/1.1")) << requests[0].head;
  EXPECT_NE(requests[0].head.find(std::string("Authorization: Bearer ") + kAccessToken), std::string::npos)
      << requests[0].head;
  EXPECT_NE(requests[0].head.find("x-ms-version: 2021-12-02"), std::string::npos) << requests[0].head;
}

}  // namespace
}  // namespace k3::storage
