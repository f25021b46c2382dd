// The weights manifest: k3-manifest.json, written by `k3 weights sync` as the last object of a finished
// copy, and read by `k3 weights verify` (and later the server's loader). It lists every file of the
// checkpoint with its size and SHA-256, so a destination without it is an unfinished copy.
//
//   {"format": "k3-weights-manifest/1", "source": "s3://bucket/prefix",
//    "files": [{"path": "config.json", "size": 123, "sha256": "...", "source_version": "etag or mtime"}]}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::weights {

inline constexpr const char* kManifestName = "k3-manifest.json";
inline constexpr const char* kManifestFormat = "k3-weights-manifest/1";
// Same format, rewritten after every file an unfinished sync committed, removed when the manifest is
// written; the suffix hides it from listings (storage::IsPartialStateKey).
inline constexpr const char* kSyncJournalName = "k3-sync-journal.json.k3partial";

struct ManifestEntry {
  std::string path;
  uint64_t size = 0;
  std::string sha256;          // 64 lower-case hex digits
  std::string source_version;  // the source's ETag or modification time when copied; may be empty
};

struct WeightsManifest {
  std::string source;                // the URI the files were copied from (no credentials)
  std::vector<ManifestEntry> files;  // sorted by path

  const ManifestEntry* Find(std::string_view path) const;
  uint64_t TotalBytes() const;
};

std::string ManifestToJson(const WeightsManifest& manifest);
// Untrusted input: DataLoss naming `what` and the field on any malformed part.
Result<WeightsManifest> ParseManifest(std::string_view text, std::string_view what);

}  // namespace k3::weights
