// The Azure Blob XML bodies: List Blobs pages (NextMarker, sizes, ETags), Get Block List replies, error
// replies, the Put Block List body, and malformed input.
#include "src/storage/azure_xml.h"

#include <gtest/gtest.h>

namespace k3::storage {
namespace {

// The shape of a List Blobs reply as the REST reference and azurite 3.35 give it.
constexpr const char* kListPage = R"(<?xml version="1.0" encoding="utf-8"?>
<EnumerationResults ServiceEndpoint="http://127.0.0.1:10000/devstoreaccount1" ContainerName="weights">
  <Prefix>tiny/</Prefix><MaxResults>2</MaxResults>
  <Blobs>
    <Blob><Name>tiny/a &amp; b.json</Name>
      <Properties><Creation-Time>Fri, 04 Dec 2026 19:00:00 GMT</Creation-Time>
        <Last-Modified>Fri, 04 Dec 2026 19:00:01 GMT</Last-Modified><Etag>0x8DD1234ABCD</Etag>
        <Content-Length>12</Content-Length><Content-Type>application/octet-stream</Content-Type>
        <BlobType>BlockBlob</BlobType></Properties></Blob>
    <Blob><Name>tiny/model.safetensors</Name>
      <Properties><Etag>"0x8DD9"</Etag><Content-Length>18446744073709551615</Content-Length></Properties></Blob>
  </Blobs>
  <NextMarker>2!88!MDAwMDI0IXRpbnkvbW9kZWw-</NextMarker>
</EnumerationResults>)";

TEST(AzureXmlTest, ParsesAListBlobsPage) {
  auto page = ParseListBlobs(kListPage, "test");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->next_marker, "2!88!MDAwMDI0IXRpbnkvbW9kZWw-");
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "tiny/a & b.json");
  EXPECT_EQ(page->objects[0].size, 12u);
  EXPECT_EQ(page->objects[0].etag, "0x8DD1234ABCD");
  EXPECT_EQ(page->objects[0].last_modified, "Fri, 04 Dec 2026 19:00:01 GMT");
  EXPECT_EQ(page->objects[1].size, 18446744073709551615ull);
  EXPECT_EQ(page->objects[1].etag, "0x8DD9") << "quotes are dropped";
}

// Names with characters XML 1.0 cannot carry come percent-encoded, marked Encoded="true" (REST reference,
// List Blobs); unmarked names keep their '%' as it is.
TEST(AzureXmlTest, EncodedNamesArePercentDecoded) {
  auto page = ParseListBlobs(
      R"(<EnumerationResults><Blobs>
           <Blob><Name Encoded="true">tiny/a%01b%EF%BF%BF%25.json</Name>
             <Properties><Content-Length>1</Content-Length></Properties></Blob>
           <Blob><Name>tiny/100%25</Name><Properties><Content-Length>2</Content-Length></Properties></Blob>
         </Blobs><NextMarker/></EnumerationResults>)",
      "test");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key,
            "tiny/a\x01"
            "b\xEF\xBF\xBF%.json");
  EXPECT_EQ(page->objects[1].key, "tiny/100%25");
  for (const char* bad : {"a%", "a%4", "a%zz"}) {
    auto broken =
        ParseListBlobs(std::string("<EnumerationResults><Blobs><Blob><Name Encoded=\"true\">") + bad +
                           "</Name><Properties><Content-Length>1</Content-Length></Properties></Blob>"
                           "</Blobs></EnumerationResults>",
                       "List Blobs of az://a/c");
    ASSERT_FALSE(broken.ok()) << bad;
    EXPECT_NE(broken.status().message().find("List Blobs of az://a/c"), std::string::npos);
  }
}

TEST(AzureXmlTest, TheLastPageHasAnEmptyNextMarkerAndMayHaveNoBlobs) {
  auto last = ParseListBlobs(
      "<EnumerationResults><Blobs><Blob><Name>x</Name><Properties><Content-Length>0</Content-Length>"
      "</Properties></Blob></Blobs><NextMarker/></EnumerationResults>",
      "test");
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->next_marker, "");
  ASSERT_EQ(last->objects.size(), 1u);
  EXPECT_EQ(last->objects[0].size, 0u);
  auto empty = ParseListBlobs("<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>", "test");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->objects.empty());
}

TEST(AzureXmlTest, MalformedListingsAreDataLossNamingTheRequest) {
  const std::pair<const char*, const char*> cases[] = {
      {"<EnumerationResults><Blobs><Blob>", "malformed XML"},
      {"<ListBucketResult/>", "expected an <EnumerationResults>"},
      {"<EnumerationResults><Blobs><Blob><Properties><Content-Length>1</Content-Length></Properties></Blob>"
       "</Blobs></EnumerationResults>",
       "no <Name>"},
      {"<EnumerationResults><Blobs><Blob><Name>a</Name></Blob></Blobs></EnumerationResults>",
       "no <Properties>"},
      {"<EnumerationResults><Blobs><Blob><Name>a</Name><Properties><Content-Length>-1</Content-Length>"
       "</Properties></Blob></Blobs></EnumerationResults>",
       "<Content-Length> '-1'"},
      {"<EnumerationResults><Blobs><Blob><Name>a</Name><Properties/></Blob></Blobs></EnumerationResults>",
       "<Content-Length> ''"},
      {"", "malformed XML"},
  };
  for (const auto& [xml, expected] : cases) {
    auto page = ParseListBlobs(xml, "List Blobs reply for az://acct/c");
    ASSERT_FALSE(page.ok()) << xml;
    EXPECT_EQ(page.status().code(), StatusCode::kDataLoss) << xml;
    EXPECT_NE(page.status().message().find("az://acct/c"), std::string::npos) << page.status().message();
    EXPECT_NE(page.status().message().find(expected), std::string::npos) << page.status().message();
  }
}

TEST(AzureXmlTest, ParsesABlockList) {
  auto list = ParseBlockList(
      "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><CommittedBlocks><Block><Name>QQ==</Name>"
      "<Size>4</Size></Block></CommittedBlocks><UncommittedBlocks><Block><Name>Qg==</Name><Size>65536</Size>"
      "</Block><Block><Name>Qw==</Name><Size>7</Size></Block></UncommittedBlocks></BlockList>",
      "test");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->committed.size(), 1u);
  EXPECT_EQ(list->committed[0].id, "QQ==");
  EXPECT_EQ(list->committed[0].size, 4u);
  ASSERT_EQ(list->uncommitted.size(), 2u);
  EXPECT_EQ(list->uncommitted[0].size, 65536u);
  EXPECT_EQ(list->uncommitted[1].id, "Qw==");
  auto none = ParseBlockList("<BlockList><UncommittedBlocks/></BlockList>", "test");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->committed.empty() && none->uncommitted.empty());
  EXPECT_FALSE(ParseBlockList("<BlockList><UncommittedBlocks><Block><Size>1</Size></Block>"
                              "</UncommittedBlocks></BlockList>",
                              "test")
                   .ok());
  EXPECT_FALSE(ParseBlockList("<EnumerationResults/>", "test").ok());
}

TEST(AzureXmlTest, ErrorRepliesKeepTheCodeAndTheFirstLineOfTheMessage) {
  const AzureErrorReply error = ParseAzureError(
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code>"
      "<Message>Server failed to authenticate the request.\nRequestId:1234\nTime:2026-12-04</Message>"
      "<AuthenticationErrorDetail>The MAC signature found in the HTTP request 'abc' is not the same"
      "</AuthenticationErrorDetail></Error>");
  EXPECT_EQ(error.code, "AuthenticationFailed");
  EXPECT_EQ(error.message, "Server failed to authenticate the request.");
  const AzureErrorReply not_xml = ParseAzureError("<html>busy</html>");
  EXPECT_EQ(not_xml.code, "");
  EXPECT_EQ(ParseAzureError("").code, "");
}

TEST(AzureXmlTest, PutBlockListNamesTheBlocksInOrderEscaped) {
  EXPECT_EQ(PutBlockListXml({"QQ==", "a<b"}),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>QQ==</Latest>"
            "<Latest>a&lt;b</Latest></BlockList>");
}

}  // namespace
}  // namespace k3::storage
