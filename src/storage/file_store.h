// FileStore: an ObjectStore over a local directory (plain paths and file:// URIs). Keys are paths below
// the root directory.
//
// Writes go to "<path>.k3partial" next to the final file and are renamed onto it by Commit() after an
// fsync, so a reader never sees a half-written file under the real name; an interrupted write leaves the
// .k3partial file, and a resumed writer appends to it. (src/io/atomic_file.h does the same for one
// process but names its temp file after the pid and deletes it when dropped, so a later run could not
// resume it; it is also a layer above this one.)
//
// Keys that would escape the root (absolute, "..", empty segments) are refused: a listing from a remote
// store must not write outside the destination directory.
#pragma once

#include <string>

#include "src/storage/object_store.h"

namespace k3::storage {

class FileStore : public ObjectStore {
 public:
  explicit FileStore(std::string root) : root_(std::move(root)) {}

  Result<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Status ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) override;
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key,
                                                   const WriteOptions& options) override;
  Status Delete(std::string_view key) override;
  std::string Describe(std::string_view key = {}) const override;

  // root/key, or InvalidArgument for a key that would leave the root.
  Result<std::string> PathOf(std::string_view key) const;

 private:
  std::string root_;
};

// InvalidArgument unless `key` is a relative '/'-separated path without "", "." or ".." segments.
Status CheckRelativeKey(std::string_view key);

}  // namespace k3::storage
