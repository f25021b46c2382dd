// The XML bodies of the S3 REST API that S3Store reads: ListObjectsV2 pages, error replies, and
// CreateMultipartUpload's upload id; and the CompleteMultipartUpload body it writes. Inputs are
// untrusted (fuzz/fuzz_s3_list_xml.cc): a malformed body is DataLoss naming the request, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/storage/object_store.h"

namespace k3::storage {

struct ListObjectsPage {
  std::vector<ObjectInfo> objects;  // keys as the bucket has them (the caller strips its prefix)
  bool truncated = false;
  std::string next_continuation_token;  // set when truncated
};

Result<ListObjectsPage> ParseListObjectsV2(std::string_view xml, std::string_view what);

struct S3ErrorReply {
  std::string code;     // "NoSuchKey", "SlowDown", "SignatureDoesNotMatch"; empty when absent
  std::string message;  // the server's words
};
// Never fails: a body that is not an S3 <Error> gives empty fields.
S3ErrorReply ParseS3Error(std::string_view xml);

Result<std::string> ParseUploadId(std::string_view xml, std::string_view what);

struct UploadedPart {
  int number = 0;    // 1-based
  std::string etag;  // as the server returned it, quotes kept
};
std::string CompleteMultipartUploadXml(const std::vector<UploadedPart>& parts);

// "abc" -> "abc"; "\"abc\"" -> "abc" (S3 ETags come quoted).
std::string UnquoteEtag(std::string_view etag);

}  // namespace k3::storage
