// Fuzzes the Azure Blob XML reply parsers (src/storage/azure_xml.h) with arbitrary bodies, as a hostile
// or broken object store could send them: List Blobs pages, Get Block List replies and <Error> replies
// must come back as a value or a DataLoss that explains itself, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/storage/azure_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto page = k3::storage::ParseListBlobs(body, "fuzz listing");
  if (!page.ok()) {
    if (page.status().message().empty()) std::abort();
  } else {
    for (const auto& object : page->objects) {
      if (object.key.empty()) std::abort();
    }
  }
  auto blocks = k3::storage::ParseBlockList(body, "fuzz block list");
  if (!blocks.ok()) {
    if (blocks.status().message().empty()) std::abort();
  } else {
    for (const auto& block : blocks->committed) {
      if (block.id.empty()) std::abort();
    }
    for (const auto& block : blocks->uncommitted) {
      if (block.id.empty()) std::abort();
    }
  }
  (void)k3::storage::ParseAzureError(body);
  return 0;
}
