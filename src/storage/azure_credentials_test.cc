// Azure endpoint and credential resolution from a made-up environment: connection strings (azurite's and
// the portal's), AZURE_STORAGE_KEY, SAS tokens, anonymous, the endpoint override, and the errors (account
// mismatch, bad key, malformed connection string) that never repeat a secret. Workload identity:
// azure_workload_identity_test.cc.
#include "src/storage/azure_credentials.h"

#include <gtest/gtest.h>

#include <map>

#include "src/storage/azure_shared_key.h"
#include "src/storage/testing/fake_env.h"

namespace k3::storage {
namespace {

using testing::FakeEnv;

constexpr const char* kSas = "sv=2021-12-02&ss=b&srt=sco&sp=rl&se=2030-01-01T00:00:00Z&sig=c2VjcmV0U0lH%3D";

TEST(AzureCredentialsTest, AzuriteConnectionStringGivesPathStyleEndpointAndSharedKey) {
  const std::string text = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" +
                           std::string(kAzuriteAccountKey) +
                           ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;";
  auto access = ResolveAzureAccess("devstoreaccount1", FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING", text}}));
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_EQ(access->endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_EQ(access->credentials.kind, AzureAuthKind::kSharedKey);
  EXPECT_EQ(access->credentials.decoded_key, Base64Decode(kAzuriteAccountKey).value());
  EXPECT_EQ(access->credentials.source, "env AZURE_STORAGE_CONNECTION_STRING (AccountKey)");
}

TEST(AzureCredentialsTest, UseDevelopmentStorageMeansAzuriteDefaults) {
  auto access = ResolveAzureAccess(
      "devstoreaccount1", FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true"}}));
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_EQ(access->endpoint, "http://127.0.0.1:10000/devstoreaccount1");
  EXPECT_EQ(access->credentials.kind, AzureAuthKind::kSharedKey);
}

TEST(AzureCredentialsTest, PortalConnectionStringBuildsTheEndpointFromTheSuffix) {
  auto access = ResolveAzureAccess(
      "prodacct", FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING",
                            "DefaultEndpointsProtocol=https;AccountName=prodacct;AccountKey=" +
                                Base64Encode("0123456789") + ";EndpointSuffix=core.chinacloudapi.cn"}}));
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_EQ(access->endpoint, "https://prodacct.blob.core.chinacloudapi.cn");
  EXPECT_EQ(access->credentials.decoded_key, "0123456789");
}

TEST(AzureCredentialsTest, ConnectionStringWithASasAppendsItWithoutTheQuestionMark) {
  auto access = ResolveAzureAccess(
      "acct", FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING",
                        "BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=?" +
                            std::string(kSas)}}));
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_EQ(access->credentials.kind, AzureAuthKind::kSas);
  EXPECT_EQ(access->credentials.sas_token, kSas) << "values may hold '='";
  EXPECT_EQ(access->credentials.source, "env AZURE_STORAGE_CONNECTION_STRING (SharedAccessSignature)");
}

TEST(AzureCredentialsTest, KeyThenSasThenAnonymousWithTheDefaultEndpoint) {
  auto key = ResolveAzureAccess(
      "acct", FakeEnv({{"AZURE_STORAGE_KEY", Base64Encode("k")}, {"AZURE_STORAGE_SAS_TOKEN", kSas}}));
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->credentials.kind, AzureAuthKind::kSharedKey);
  EXPECT_EQ(key->credentials.source, "env AZURE_STORAGE_KEY");
  EXPECT_EQ(key->endpoint, "https://acct.blob.core.windows.net");

  auto sas = ResolveAzureAccess("acct", FakeEnv({{"AZURE_STORAGE_SAS_TOKEN", std::string("?") + kSas}}));
  ASSERT_TRUE(sas.ok());
  EXPECT_EQ(sas->credentials.kind, AzureAuthKind::kSas);
  EXPECT_EQ(sas->credentials.sas_token, kSas);
  EXPECT_EQ(sas->credentials.source, "env AZURE_STORAGE_SAS_TOKEN");

  auto anonymous = ResolveAzureAccess("acct", FakeEnv({}));
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->credentials.kind, AzureAuthKind::kAnonymous);
  EXPECT_NE(anonymous->credentials.source.find("anonymous"), std::string::npos);
}

TEST(AzureCredentialsTest, EndpointVariableOverridesEverything) {
  auto access = ResolveAzureAccess(
      "devstoreaccount1", FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true"},
                                   {"AZURE_STORAGE_ENDPOINT", "http://127.0.0.1:4242/devstoreaccount1//"}}));
  ASSERT_TRUE(access.ok());
  EXPECT_EQ(access->endpoint, "http://127.0.0.1:4242/devstoreaccount1");
  auto no_scheme = ResolveAzureAccess("acct", FakeEnv({{"AZURE_STORAGE_ENDPOINT", "127.0.0.1:4242/acct"}}));
  ASSERT_FALSE(no_scheme.ok());
  EXPECT_NE(no_scheme.status().message().find("needs a scheme"), std::string::npos);
}

TEST(AzureCredentialsTest, ErrorsNameTheSourceButNeverTheSecret) {
  const std::string secret = "bm90LWEtcmVhbC1rZXk-not-base64!";
  auto bad_key = ResolveAzureAccess("acct", FakeEnv({{"AZURE_STORAGE_KEY", secret}}));
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.status().message().find("env AZURE_STORAGE_KEY"), std::string::npos);
  EXPECT_EQ(bad_key.status().message().find(secret), std::string::npos) << bad_key.status().message();

  auto other_account =
      ResolveAzureAccess("acct", FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING",
                                           "AccountName=other;AccountKey=" + Base64Encode("s3cr3t")}}));
  ASSERT_FALSE(other_account.ok());
  EXPECT_NE(other_account.status().message().find("'other'"), std::string::npos);
  EXPECT_NE(other_account.status().message().find("'acct'"), std::string::npos);
  EXPECT_EQ(other_account.status().message().find(Base64Encode("s3cr3t")), std::string::npos);

  auto malformed = ResolveAzureAccess(
      "acct", FakeEnv({{"AZURE_STORAGE_CONNECTION_STRING", "AccountName=acct;" + secret}}));
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("part 2"), std::string::npos) << malformed.status().message();
  EXPECT_EQ(malformed.status().message().find(secret), std::string::npos);
}

TEST(AzureCredentialsTest, AKeyOrSasNextToAFederatedTokenFileIsUsedWithoutAnExchange) {
  auto access = ResolveAzureAccess("acct", FakeEnv({{"AZURE_FEDERATED_TOKEN_FILE", "/nonexistent/token"},
                                                    {"AZURE_STORAGE_SAS_TOKEN", kSas}}));
  ASSERT_TRUE(access.ok()) << access.status().ToString();
  EXPECT_EQ(access->credentials.kind, AzureAuthKind::kSas);
}

}  // namespace
}  // namespace k3::storage
