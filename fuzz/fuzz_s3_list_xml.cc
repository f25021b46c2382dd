// Fuzzes the S3 XML reply parsers (src/storage/s3_xml.h) with arbitrary bodies, as a hostile or broken
// object store could send them: ListObjectsV2 pages, <Error> replies and CreateMultipartUpload replies must
// come back as a value or a DataLoss that explains itself, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/storage/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto page = k3::storage::ParseListObjectsV2(body, "fuzz listing");
  if (!page.ok()) {
    if (page.status().message().empty()) std::abort();
  } else {
    if (page->truncated && page->next_continuation_token.empty()) std::abort();
    for (const auto& object : page->objects) {
      if (object.key.empty()) std::abort();
    }
  }
  (void)k3::storage::ParseS3Error(body);
  auto upload = k3::storage::ParseUploadId(body, "fuzz upload");
  if (upload.ok() && upload->empty()) std::abort();
  return 0;
}
