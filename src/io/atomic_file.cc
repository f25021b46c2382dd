// AtomicFile: temp-name-then-rename file writing (POSIX). See atomic_file.h.
#include "src/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace k3::io {

Result<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& path) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return IoError("{}: cannot create: {}; fix: check that the directory exists and is writable", tmp,
                   std::strerror(errno));
  }
  return std::unique_ptr<AtomicFile>(new AtomicFile(path, std::move(tmp), fd));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

Status AtomicFile::Write(const void* data, size_t size) {
  if (fd_ < 0) return Internal("{}: write after Commit", tmp_path_);
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, bytes + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("{}: write failed: {}; fix: free disk space or check permissions", tmp_path_,
                     std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

Status AtomicFile::Commit() {
  if (fd_ < 0) return Internal("{}: Commit called twice", tmp_path_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return IoError("{}: close failed: {}", tmp_path_, std::strerror(errno));
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return IoError("{}: rename to {} failed: {}", tmp_path_, path_, std::strerror(errno));
  }
  committed_ = true;
  return OkStatus();
}

}  // namespace k3::io
