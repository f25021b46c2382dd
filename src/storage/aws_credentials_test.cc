// The AWS credential chain: environment first, then the shared credentials file and its profiles; what
// is not implemented says so; secrets never appear in messages.
#include "src/storage/aws_credentials.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "src/storage/s3_store.h"

namespace k3::storage {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

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

TEST(AwsCredentialsTest, UnimplementedSourcesSaySo) {
  auto web = ResolveAwsCredentials(FakeEnv({{"HOME", "/nonexistent"},
                                            {"AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token"},
                                            {"AWS_ROLE_ARN", "arn:aws:iam::1:role/x"}}));
  ASSERT_FALSE(web.ok());
  EXPECT_EQ(web.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(web.status().message().find("AWS_WEB_IDENTITY_TOKEN_FILE"), std::string::npos);

  auto none = ResolveAwsCredentials(FakeEnv({{"HOME", "/nonexistent"}}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
  EXPECT_NE(none.status().message().find("IMDSv2"), std::string::npos);
}

TEST(S3OptionsTest, EndpointAndRegionFromTheEnvironment) {
  S3Options options = S3OptionsFromEnvironment(FakeEnv({{"AWS_ENDPOINT_URL", "http://generic:1/"},
                                                        {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/"},
                                                        {"AWS_DEFAULT_REGION", "eu-west-1"}}));
  EXPECT_EQ(options.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(options.region, "eu-west-1");
  EXPECT_FALSE(options.path_style.has_value());
  EXPECT_EQ(
      S3OptionsFromEnvironment(FakeEnv({{"AWS_REGION", "ap-east-1"}, {"AWS_DEFAULT_REGION", "x"}})).region,
      "ap-east-1");
  EXPECT_EQ(S3OptionsFromEnvironment(FakeEnv({})).region, "us-east-1");
}

TEST(S3OptionsTest, AwsUriEncodeKeepsUnreservedCharacters) {
  EXPECT_EQ(AwsUriEncode("a b/c~d_e.f-g+h", true), "a%20b/c~d_e.f-g%2Bh");
  EXPECT_EQ(AwsUriEncode("a/b=c", false), "a%2Fb%3Dc");
}

}  // namespace
}  // namespace k3::storage
