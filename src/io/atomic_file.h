// AtomicFile: writes a file piece by piece under a temporary name (PATH.tmp.<pid>) and renames it over
// PATH only on Commit(), so a crash or an error never leaves a half-written file under the real name.
// Dropping an uncommitted AtomicFile deletes the temporary. Used for safetensors shards, which are too
// large to assemble in memory first (WriteFileAtomic in src/base needs the whole content).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "src/base/status.h"

namespace k3::io {

class AtomicFile {
 public:
  static Result<std::unique_ptr<AtomicFile>> Create(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  Status Write(const void* data, size_t size);
  // Flushes, closes and renames onto the final path.
  Status Commit();

 private:
  AtomicFile(std::string path, std::string tmp_path, int fd)
      : path_(std::move(path)), tmp_path_(std::move(tmp_path)), fd_(fd) {}
  std::string path_;
  std::string tmp_path_;
  int fd_;
  bool committed_ = false;
};

}  // namespace k3::io
