// Fuzzes the Hugging Face Hub tree-listing parsers (src/storage/hf_tree.h) with arbitrary bodies, as a
// hostile or broken Hub could send them: a page must come back as files with non-empty paths or a
// DataLoss that explains itself, and a Link header as a URL or "", never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/storage/hf_tree.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto page = k3::storage::ParseHfTreePage(body, "fuzz listing");
  if (!page.ok()) {
    if (page.status().message().empty()) std::abort();
  } else {
    for (const auto& file : *page) {
      if (file.path.empty()) std::abort();
    }
  }
  const std::string next = k3::storage::NextLinkUrl(body);
  if (next.size() > body.size()) std::abort();
  return 0;
}
