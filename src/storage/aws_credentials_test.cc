// The AWS credential chain: environment first, then the shared credentials file and its profiles, then
// web identity through a loopback STS; what is not implemented says so; secrets never appear in messages.
#include "src/storage/aws_credentials.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/storage/aws_web_identity.h"
#include "src/storage/s3_store.h"
#include "src/storage/testing/canned_http_server.h"
#include "src/storage/testing/fake_env.h"

namespace k3::storage {
namespace {

using testing::FakeEnv;

constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRET";

TEST(AwsCredentialsTest, EnvironmentComesFirst) {
  auto creds = ResolveAwsCredentials(FakeEnv(
      {{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", kSecret}, {"AWS_SESSION_TOKEN", "tok"}}));
  ASSERT_TRUE(creds.ok());
  EXPECT_EQ(creds->access_key_id, "AKID");
  EXPECT_EQ(creds->session_token, "tok");
  EXPECT_EQ(creds->source, "env AWS_ACCESS_KEY_ID");

  auto half = ResolveAwsCredentials(FakeEnv({{"AWS_SECRET_ACCESS_KEY", kSecret}}));
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
  EXPECT_EQ(half.status().message().find(kSecret), std::string::npos);
}

TEST(AwsCredentialsTest, SharedCredentialsFileAndProfiles) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("k3_aws_creds_" + std::to_string(::getpid()))).string();
  {
    std::ofstream out(path);
    out << "# comment\n[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = " << kSecret
        << "\n\n[ci]\naws_access_key_id=AKCI\naws_secret_access_key=ci-secret\naws_session_token = t\n";
  }
  auto def = ResolveAwsCredentials(FakeEnv({{"AWS_SHARED_CREDENTIALS_FILE", path}}));
  ASSERT_TRUE(def.ok()) << def.status().ToString();
  EXPECT_EQ(def->access_key_id, "AKDEFAULT");
  EXPECT_EQ(def->secret_access_key, kSecret);
  EXPECT_EQ(def->source, "shared credentials file " + path + " [default]");

  auto ci = ResolveAwsCredentials(FakeEnv({{"AWS_SHARED_CREDENTIALS_FILE", path}, {"AWS_PROFILE", "ci"}}));
  ASSERT_TRUE(ci.ok());
  EXPECT_EQ(ci->access_key_id, "AKCI");
  EXPECT_EQ(ci->session_token, "t");

  auto missing =
      ResolveAwsCredentials(FakeEnv({{"AWS_SHARED_CREDENTIALS_FILE", path}, {"AWS_PROFILE", "prod"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("[prod]"), std::string::npos);
  std::filesystem::remove(path);

  auto gone = ResolveAwsCredentials(FakeEnv({{"AWS_SHARED_CREDENTIALS_FILE", path}}));
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find(path), std::string::npos);
}

// A loopback stand-in for STS (the cloud's boundary): canned replies, recorded form bodies.
class FakeSts : public testing::CannedHttpServer {
 public:
  explicit FakeSts(std::vector<std::pair<int, std::string>> replies)
      : CannedHttpServer(std::move(replies), "text/xml") {}
};

constexpr const char* kStsReply =
    R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>ASIATEMP</AccessKeyId>
      <SecretAccessKey>tempSECRET</SecretAccessKey>
      <SessionToken>tempTOKEN</SessionToken>
      <Expiration>2026-12-04T18:00:00Z</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>)";

std::string WriteToken(const std::string& token) {
  const std::string path = "/tmp/k3_web_identity_token_" + std::to_string(::getpid());
  std::ofstream(path) << token << "\n";
  return path;
}

TEST(AwsCredentialsTest, WebIdentityExchangesTheTokenWithSts) {
  const std::string token = "eyJhbGciOiJSUzI1NiJ9.payload+with/odd=chars.sig";
  const std::string path = WriteToken(token);
  FakeSts sts({{503, "<ErrorResponse><Error><Code>ServiceUnavailable</Code></Error></ErrorResponse>"},
               {200, kStsReply}});  // the first attempt is retried
  auto creds = ResolveAwsCredentials(FakeEnv({{"HOME", "/nonexistent"},
                                              {"AWS_WEB_IDENTITY_TOKEN_FILE", path},
                                              {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/k3-weights"},
                                              {"AWS_ROLE_SESSION_NAME", "k3-test"},
                                              {"AWS_ENDPOINT_URL_STS", sts.endpoint()}}));
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->access_key_id, "ASIATEMP");
  EXPECT_EQ(creds->secret_access_key, "tempSECRET");
  EXPECT_EQ(creds->session_token, "tempTOKEN");
  EXPECT_NE(creds->source.find("arn:aws:iam::123456789012:role/k3-weights"), std::string::npos);
  EXPECT_EQ(creds->source.find(token), std::string::npos);
  const std::vector<std::string> bodies = sts.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  const std::string& form = bodies[1];
  EXPECT_NE(form.find("Action=AssumeRoleWithWebIdentity"), std::string::npos) << form;
  EXPECT_NE(form.find("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fk3-weights"), std::string::npos);
  EXPECT_NE(form.find("RoleSessionName=k3-test"), std::string::npos);
  // The token, form-encoded (its trailing newline dropped).
  EXPECT_TRUE(form.ends_with("&WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.payload%2Bwith%2Fodd%3Dchars.sig"))
      << form;
  std::filesystem::remove(path);
}

TEST(AwsCredentialsTest, WebIdentityErrorsNameTheRoleAndStsCodeButNeverTheToken) {
  const std::string token = "SECRET-OIDC-TOKEN";
  const std::string path = WriteToken(token);
  FakeSts sts({{400,
                "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                "<Message>No OpenIDConnect provider found</Message></Error></ErrorResponse>"}});
  auto creds = ResolveAwsCredentials(FakeEnv({{"HOME", "/nonexistent"},
                                              {"AWS_WEB_IDENTITY_TOKEN_FILE", path},
                                              {"AWS_ROLE_ARN", "arn:aws:iam::1:role/x"},
                                              {"AWS_ENDPOINT_URL_STS", sts.endpoint()}}));
  ASSERT_FALSE(creds.ok());
  const std::string message = creds.status().message();
  EXPECT_NE(message.find("arn:aws:iam::1:role/x"), std::string::npos) << message;
  EXPECT_NE(message.find("InvalidIdentityToken"), std::string::npos) << message;
  EXPECT_NE(message.find("HTTP 400"), std::string::npos) << message;
  EXPECT_EQ(message.find(token), std::string::npos) << message;

  std::filesystem::remove(path);
  auto missing = ResolveAwsCredentials(FakeEnv({{"HOME", "/nonexistent"},
                                                {"AWS_WEB_IDENTITY_TOKEN_FILE", path},
                                                {"AWS_ROLE_ARN", "arn:aws:iam::1:role/x"},
                                                {"AWS_ENDPOINT_URL_STS", sts.endpoint()}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos) << missing.status().ToString();
}

TEST(AwsCredentialsTest, StsReplyParser) {
  EXPECT_TRUE(ParseAssumeRoleReply(kStsReply, 200, "src").ok());
  EXPECT_FALSE(ParseAssumeRoleReply("<AssumeRoleWithWebIdentityResponse/>", 200, "src").ok());
  EXPECT_FALSE(ParseAssumeRoleReply("not xml", 200, "src").ok());
  auto denied = ParseAssumeRoleReply("garbage", 403, "src");
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("HTTP 403"), std::string::npos);
}

TEST(AwsCredentialsTest, NoSourceSaysWhereItLooked) {
  auto none = ResolveAwsCredentials(FakeEnv({{"HOME", "/nonexistent"}}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
  EXPECT_NE(none.status().message().find("IMDSv2"), std::string::npos);
  EXPECT_NE(none.status().message().find("AWS_WEB_IDENTITY_TOKEN_FILE"), std::string::npos);
}

}  // namespace
}  // namespace k3::storage
