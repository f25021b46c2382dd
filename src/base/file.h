// File helpers: read-only memory maps (checkpoints), whole-file reads (configs), atomic writes
// (generated checkpoints are written to a temp name and renamed, so a crash never leaves half a file),
// and the per-user cache directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace k3 {

// A read-only, shared mapping of a whole file. Empty files map to size 0 with data() == nullptr.
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

Result<std::string> ReadFileToString(const std::string& path);

// Writes data to path.tmp.<pid> then renames it over path.
Status WriteFileAtomic(const std::string& path, std::string_view data);

// $XDG_CACHE_HOME/k3stack, else $HOME/.cache/k3stack, else /tmp/k3stack-<uid>. Not created.
std::string UserCacheDir();

}  // namespace k3
