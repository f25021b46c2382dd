// The S3 XML bodies: ListObjectsV2 pages (pagination, sizes, ETags), error replies, malformed input.
#include "src/storage/s3_xml.h"

#include <gtest/gtest.h>

namespace k3::storage {
namespace {

TEST(S3XmlTest, ParsesAListingPage) {
  const std::string xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>m/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken>
  <Contents><Key>m/a &amp; b.json</Key><LastModified>2026-12-04T10:00:00.000Z</LastModified>
    <ETag>&quot;0123abcd&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>m/model.safetensors</Key><ETag>"ff-2"</ETag><Size>18446744073709551615</Size></Contents>
</ListBucketResult>)";
  auto page = ParseListObjectsV2(xml, "test");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "tok+/=");
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "m/a & b.json");
  EXPECT_EQ(page->objects[0].size, 12u);
  EXPECT_EQ(page->objects[0].etag, "0123abcd");
  EXPECT_EQ(page->objects[0].last_modified, "2026-12-04T10:00:00.000Z");
  EXPECT_EQ(page->objects[1].size, 18446744073709551615ull);
  EXPECT_EQ(page->objects[1].etag, "ff-2");
}

TEST(S3XmlTest, RejectsMalformedListings) {
  for (const char* xml : {
           "",
           "<ListBucketResult>",
           "<Error><Code>x</Code></Error>",
           "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>a</Key><Size>1e3</Size></Contents></ListBucketResult>",
           "<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999</Size></Contents></"
           "ListBucketResult>",
           "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
           "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
           "<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>",
       }) {
    auto page = ParseListObjectsV2(xml, "reply");
    EXPECT_FALSE(page.ok()) << xml;
    if (!page.ok()) {
      EXPECT_EQ(page.status().code(), StatusCode::kDataLoss) << xml;
    }
  }
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "<a>";
  EXPECT_FALSE(ParseListObjectsV2(deep, "deep").ok());
}

TEST(S3XmlTest, ParsesErrorRepliesAndUploadIds) {
  const S3ErrorReply error = ParseS3Error(
      "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>"
      "<RequestId>1</RequestId></Error>");
  EXPECT_EQ(error.code, "SlowDown");
  EXPECT_EQ(error.message, "Please reduce your request rate.");
  EXPECT_TRUE(ParseS3Error("not xml").code.empty());

  auto id = ParseUploadId(
      "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>abc</UploadId>"
      "</InitiateMultipartUploadResult>",
      "init");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "abc");
  EXPECT_FALSE(ParseUploadId("<InitiateMultipartUploadResult/>", "init").ok());

  EXPECT_EQ(CompleteMultipartUploadXml({{1, "\"e1\""}, {2, "\"e2\""}}),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part></CompleteMultipartUpload>");
}

}  // namespace
}  // namespace k3::storage
