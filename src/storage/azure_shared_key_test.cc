// Shared Key signing (azure_shared_key.h) against fixed vectors.
//
// The expected strings-to-sign below are written out by hand from Microsoft's "Authorize with Shared
// Key" rules (x-ms-version 2015-02-21+): the verb, then eleven standard header slots each ended by '\n'
// (Content-Encoding, Content-Language, Content-Length (empty when 0), Content-MD5, Content-Type, Date,
// If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since, Range), then the x-ms-* headers
// lower-cased and sorted as "name:value\n", then "/ACCOUNT" + the encoded URI path and one
// "\nname:value" per query parameter, sorted by name, value decoded. The expected signatures are
// Base64(HMAC-SHA256(Base64Decode(key), string-to-sign)) computed outside this code base, with Python's
// hmac/hashlib/base64 modules, over azurite's published dev account key:
//   base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(), hashlib.sha256).digest())
// (The live test, storage_azure_test, checks the same signer against azurite, which re-signs every
// request itself.)
#include "src/storage/azure_shared_key.h"

#include <gtest/gtest.h>

#include "src/storage/azure_credentials.h"

namespace k3::storage {
namespace {

constexpr const char* kDate = "Fri, 04 Dec 2026 19:30:00 GMT";

std::string DevKey() { return Base64Decode(kAzuriteAccountKey).value(); }

TEST(AzureSharedKeyTest, ListBlobsOnAPathStyleEndpointSignsTheAccountTwiceAndSortsTheQuery) {
  SharedKeyRequest request;
  request.method = "GET";
  request.url_path = "/devstoreaccount1/weights";
  request.query = {
      {"restype", "container"}, {"comp", "list"}, {"maxresults", "5000"}, {"prefix", "tiny/a b"}};
  request.headers = {{"x-ms-version", "2021-12-02"}, {"x-ms-date", kDate}};
  const std::string string_to_sign = SharedKeyStringToSign(request, "devstoreaccount1");
  EXPECT_EQ(string_to_sign,
            "GET\n\n\n\n\n\n\n\n\n\n\n\n"
            "x-ms-date:Fri, 04 Dec 2026 19:30:00 GMT\nx-ms-version:2021-12-02\n"
            "/devstoreaccount1/devstoreaccount1/weights\ncomp:list\nmaxresults:5000\nprefix:tiny/a b\n"
            "restype:container");
  EXPECT_EQ(SharedKeyAuthorization(string_to_sign, "devstoreaccount1", DevKey()),
            "SharedKey devstoreaccount1:J5n8xiDwVyy7gJpJcxtdAn0vL0Uqv/7EINOwUH5pU7g=");
}

TEST(AzureSharedKeyTest, PutBlockSignsLengthTypeAndLowerCasedTrimmedMetadataHeaders) {
  SharedKeyRequest request;
  request.method = "PUT";
  request.url_path = "/myaccount/models/kimi%20k3/shard.bin";
  request.query = {{"comp", "block"}, {"blockid", "azNibG9jaw=="}};
  request.headers = {{"Content-Length", "5"},
                     {"Content-Type", "application/xml"},
                     {"X-MS-Meta-Origin", "  k3 test "},
                     {"x-ms-version", "2021-12-02"},
                     {"x-ms-date", kDate},
                     {"Expect", ""}};
  const std::string string_to_sign = SharedKeyStringToSign(request, "myaccount");
  EXPECT_EQ(string_to_sign,
            "PUT\n\n\n5\n\napplication/xml\n\n\n\n\n\n\n"
            "x-ms-date:Fri, 04 Dec 2026 19:30:00 GMT\nx-ms-meta-origin:k3 test\nx-ms-version:2021-12-02\n"
            "/myaccount/myaccount/models/kimi%20k3/shard.bin\nblockid:azNibG9jaw==\ncomp:block");
  EXPECT_EQ(SharedKeyAuthorization(string_to_sign, "myaccount", DevKey()),
            "SharedKey myaccount:f3evYQFxNxdLOdb/E0HAw2CbuSIotjs9Rxhe8rgVQng=");
}

TEST(AzureSharedKeyTest, RangedGetSignsTheRangeSlotAndAZeroLengthAsEmpty) {
  SharedKeyRequest request;
  request.method = "GET";
  request.url_path = "/models/config.json";
  request.headers = {
      {"Range", "bytes=0-99"}, {"Content-Length", "0"}, {"x-ms-version", "2021-12-02"}, {"x-ms-date", kDate}};
  const std::string string_to_sign = SharedKeyStringToSign(request, "myaccount");
  EXPECT_EQ(
      string_to_sign,
      "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-99\n"
      "x-ms-date:Fri, 04 Dec 2026 19:30:00 GMT\nx-ms-version:2021-12-02\n/myaccount/models/config.json");
  EXPECT_EQ(SharedKeyAuthorization(string_to_sign, "myaccount", DevKey()),
            "SharedKey myaccount:Lt4/1J82fD9f/TkSdfpJlHFG1ci42j3OKJ48bNdK34A=");
}

TEST(AzureSharedKeyTest, ADifferentKeyGivesADifferentSignature) {
  const std::string string_to_sign = "GET\n\n\n\n\n\n\n\n\n\n\n\n/a/b";
  EXPECT_NE(SharedKeyAuthorization(string_to_sign, "a", DevKey()),
            SharedKeyAuthorization(string_to_sign, "a", "another key"));
}

TEST(AzureSharedKeyTest, Base64RoundTripsAndRejectsMalformedText) {
  for (const std::string& bytes : {std::string(""), std::string("f"), std::string("fo"), std::string("foo"),
                                   std::string("\x00\xff\x10", 3)}) {
    const std::string encoded = Base64Encode(bytes);
    if (bytes.empty()) {
      EXPECT_EQ(encoded, "");
      continue;
    }
    auto decoded = Base64Decode(encoded);
    ASSERT_TRUE(decoded.ok()) << encoded;
    EXPECT_EQ(*decoded, bytes);
  }
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(DevKey().size(), 64u);
  for (const char* bad : {"", "abc", "ab=c", "a=bc", "ab!c", "Zm9vYg=x"}) {
    EXPECT_FALSE(Base64Decode(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace k3::storage
