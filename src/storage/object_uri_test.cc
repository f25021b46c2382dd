// ParseObjectUri: every scheme's form, and errors that name the URI and the fix.
#include "src/storage/object_uri.h"

#include <gtest/gtest.h>

namespace k3::storage {
namespace {

TEST(ObjectUriTest, ParsesEveryScheme) {
  auto s3 = ParseObjectUri("s3://my-bucket/models/k3/");
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  EXPECT_EQ(s3->scheme, UriScheme::kS3);
  EXPECT_EQ(s3->bucket, "my-bucket");
  EXPECT_EQ(s3->prefix, "models/k3/");
  EXPECT_EQ(s3->Describe("config.json"), "s3://my-bucket/models/k3/config.json");

  auto bare = ParseObjectUri("s3://bucket");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->prefix, "");
  EXPECT_EQ(bare->Describe("a"), "s3://bucket/a");

  auto az = ParseObjectUri("az://acct/weights/kimi");
  ASSERT_TRUE(az.ok());
  EXPECT_EQ(az->scheme, UriScheme::kAzure);
  EXPECT_EQ(az->account, "acct");
  EXPECT_EQ(az->bucket, "weights");
  EXPECT_EQ(az->prefix, "kimi");

  auto hf = ParseObjectUri("hf://moonshotai/Kimi-K3@abc123");
  ASSERT_TRUE(hf.ok());
  EXPECT_EQ(hf->scheme, UriScheme::kHuggingFace);
  EXPECT_EQ(hf->bucket, "moonshotai/Kimi-K3");
  EXPECT_EQ(hf->revision, "abc123");
  auto hf_main = ParseObjectUri("hf://org/repo");
  ASSERT_TRUE(hf_main.ok());
  EXPECT_EQ(hf_main->revision, "main");

  EXPECT_EQ(ParseObjectUri("gs://b/p")->scheme, UriScheme::kGcs);
  EXPECT_EQ(ParseObjectUri("oss://b/p")->scheme, UriScheme::kOss);
  auto file = ParseObjectUri("file:///data/model");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->scheme, UriScheme::kFile);
  EXPECT_EQ(file->prefix, "/data/model");
  auto plain = ParseObjectUri("./model");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->scheme, UriScheme::kFile);
  EXPECT_EQ(plain->Describe("x"), "./model/x");
}

TEST(ObjectUriTest, ErrorsNameTheUriAndTheForm) {
  auto unknown = ParseObjectUri("ftp://host/x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("ftp://host/x"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("s3://bucket/prefix"), std::string::npos);

  auto no_bucket = ParseObjectUri("s3:///x");
  ASSERT_FALSE(no_bucket.ok());
  EXPECT_NE(no_bucket.status().message().find("bucket is missing"), std::string::npos);

  auto no_container = ParseObjectUri("az://acct");
  ASSERT_FALSE(no_container.ok());
  EXPECT_NE(no_container.status().message().find("az://account/container/prefix"), std::string::npos);

  EXPECT_FALSE(ParseObjectUri("s3://b/a/../../etc").ok());
  EXPECT_FALSE(ParseObjectUri("s3://b/a//b").ok());
  EXPECT_FALSE(ParseObjectUri("file://relative").ok());
  EXPECT_FALSE(ParseObjectUri("hf://org/repo@").ok());
  EXPECT_FALSE(ParseObjectUri("").ok());
}

TEST(ObjectUriTest, CredentialsInTheUriAreRefusedWithoutEchoingThem) {
  auto with_secret = ParseObjectUri("s3://AKIDEXAMPLE:wJalrXUtnFEMI@bucket/x");
  ASSERT_FALSE(with_secret.ok());
  EXPECT_EQ(with_secret.status().message().find("wJalrXUtnFEMI"), std::string::npos);
  EXPECT_NE(with_secret.status().message().find("credentials"), std::string::npos);
}

TEST(ObjectUriTest, JoinKeyUsesExactlyOneSlash) {
  EXPECT_EQ(JoinKey("a", "b"), "a/b");
  EXPECT_EQ(JoinKey("a/", "b"), "a/b");
  EXPECT_EQ(JoinKey("", "b"), "b");
  EXPECT_EQ(JoinKey("a", ""), "a");
}

}  // namespace
}  // namespace k3::storage
