// AtomicFile: writes a file piece by piece under a temporary name (PATH.tmp.<pid>) and renames it over
// PATH only on Commit(), so a crash or an error never leaves a half-written file under the real name.
// Dropping an uncommitted AtomicFile deletes the temporary. Used for safetensors shards, which are too
// large to assemble in memory first (WriteFileAtomic in src/base needs the whole content).
//
// Writes reach the file in whole 2 MiB blocks at 2 MiB-aligned offsets (a write-combining buffer), and
// Commit() flushes the file to disk and drops it from the page cache, so that its first reader (the
// model loader's MADV_HUGEPAGE mapping, src/base/file.cc) reads it back in 2 MiB folios, each mapped by
// one page-table entry. Pages cached by the write path are mostly smaller folios; on a VM with shadow
// page tables every 4 KiB page of a checkpoint then costs ~1 us at its first touch and a GEMV over
// weights mapped with 4 KiB entries ran at 0.6x the speed of the same weights on 2 MiB entries.
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

  static constexpr size_t kBlockBytes = size_t{2} << 20;

 private:
  AtomicFile(std::string path, std::string tmp_path, int fd)
      : path_(std::move(path)), tmp_path_(std::move(tmp_path)), fd_(fd) {}
  // Writes buffer_ to the file and empties it.
  Status Flush();
  std::string path_;
  std::string tmp_path_;
  int fd_;
  bool committed_ = false;
  std::unique_ptr<uint8_t[]> buffer_;  // kBlockBytes, allocated at the first Write
  size_t buffered_ = 0;
};

}  // namespace k3::io
