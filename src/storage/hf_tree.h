// The Hugging Face Hub's repository listing, parsed: one page of
//   GET /api/models/{org}/{repo}/tree/{revision}[/{path}]?recursive=true
// is a JSON array of entries {"type": "file"|"directory", "path", "size", "oid", "lfs": {"oid", "size"}},
// and the next page's URL comes in the reply's Link header (<URL>; rel="next"). Fuzzed by
// fuzz/fuzz_hf_tree_json.cc: any input gives entries or an error, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::storage {

struct HfTreeEntry {
  std::string path;   // from the repository's root
  uint64_t size = 0;  // the file's bytes (lfs.size for files stored in LFS)
  std::string oid;    // lfs.oid (the sha256) for LFS files, else the git blob id
  bool lfs = false;   // stored in LFS: oid is the content's SHA-256
};

// The files of one page (directories skipped). `what` names the listing in errors.
Result<std::vector<HfTreeEntry>> ParseHfTreePage(std::string_view json, const std::string& what);

// The rel="next" URL of a Link header value, or "" when there is none.
std::string NextLinkUrl(std::string_view link_header);

}  // namespace k3::storage
