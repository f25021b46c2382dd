// ObjectStore: the one interface the weights tools (and later the streaming loader) use for every kind
// of storage: list, stat, read byte ranges, and write objects.
//
// Keys are relative to the store's root (the URI's prefix), '/'-separated, never starting with '/'.
// Every call is safe from several threads at once, so a RangeFetcher (range_fetcher.h) can read many
// ranges of one store in parallel.
//
// Writes never expose a half-written object under its final key: an ObjectWriter keeps its bytes under
// a partial name (a local temp file, or an unfinished S3 multipart upload) until Commit(). A writer
// dropped without Commit() (error, cancel, kill) leaves the partial state behind, and the next OpenWriter
// of the same key with WriteOptions::resume picks it up: resume_offset() says how many leading bytes are
// already stored, and the caller appends from there.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::storage {

struct ObjectInfo {
  std::string key;  // relative to the store's root
  uint64_t size = 0;
  std::string etag;           // without quotes; empty when the store has none (local files)
  std::string last_modified;  // as the store reports it (ISO 8601 for S3, "mtime:<s>.<ns>" for files)
  // The content's SHA-256 (64 lowercase hex digits) where the store publishes one (the Hub, for files in
  // LFS); a copy must hash to it. Empty when unknown.
  std::string sha256;
};

struct WriteOptions {
  // The object's final size when known (lets a store choose a single PUT or a multipart upload, and
  // check the stored partial state belongs to the same object). 0 = unknown.
  uint64_t expected_size = 0;
  // Continue a partial write left by an earlier writer of this key (same expected_size) instead of
  // starting over.
  bool resume = true;
};

class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  // Bytes of the object already stored by an earlier, interrupted writer; the caller's first Append
  // continues at this offset. 0 for a fresh write.
  virtual uint64_t resume_offset() const = 0;
  virtual Status Append(std::span<const uint8_t> data) = 0;
  // Makes the object visible under its key, whole. After an error the partial state stays for a resume.
  virtual Status Commit() = 0;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Every object whose key starts with `prefix` (recursively), sorted by key. Partial-write state
  // (ObjectWriter's temp names) is not listed.
  virtual Result<std::vector<ObjectInfo>> List(std::string_view prefix) = 0;
  // NotFound when the object does not exist.
  virtual Result<ObjectInfo> Stat(std::string_view key) = 0;
  // Reads exactly dst.size() bytes starting at `offset`. A range past the end is an error (DataLoss
  // naming the object and its size).
  virtual Status ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) = 0;
  virtual Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key,
                                                           const WriteOptions& options) = 0;
  // Removes an object; ok when it did not exist.
  virtual Status Delete(std::string_view key) = 0;

  // "s3://bucket/prefix/key" (or the local path) for messages; never holds credentials.
  virtual std::string Describe(std::string_view key = {}) const = 0;

  // Writes a whole small object (manifests, JSON) through OpenWriter without resume.
  Status WriteAll(std::string_view key, std::span<const uint8_t> data);
  // Reads a whole object (Stat + ReadRange).
  Result<std::string> ReadAll(std::string_view key);
};

// Names the partial state of key `key` (temp files, multipart journals) that List() hides: these end
// with ".k3partial" or ".k3upload".
bool IsPartialStateKey(std::string_view key);
inline constexpr std::string_view kPartialFileSuffix = ".k3partial";
inline constexpr std::string_view kUploadJournalSuffix = ".k3upload";

}  // namespace k3::storage
