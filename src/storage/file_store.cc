// FileStore: local directory as an ObjectStore (file_store.h).
#include "src/storage/file_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "src/storage/object_uri.h"

namespace k3::storage {
namespace {

namespace fs = std::filesystem;

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  if (err == ENOENT) return NotFound("{}: {}: no such file or directory", what, path);
  return IoError("{}: {}: {}", what, path, std::strerror(err));
}

// "mtime:<seconds>.<nanoseconds>": changes whenever the file is rewritten.
std::string ModificationTime(const struct stat& st) {
  return "mtime:" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

class FileWriter : public ObjectWriter {
 public:
  FileWriter(std::string path, std::string partial, int fd, uint64_t resume_offset)
      : path_(std::move(path)), partial_(std::move(partial)), fd_(fd), resume_offset_(resume_offset) {}
  ~FileWriter() override {
    if (fd_ >= 0) ::close(fd_);
  }

  uint64_t resume_offset() const override { return resume_offset_; }

  Status Append(std::span<const uint8_t> data) override {
    if (fd_ < 0) return Internal("{}: write after commit", path_);
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoStatus("cannot write", partial_, errno);
      done += static_cast<size_t>(n);
    }
    return OkStatus();
  }

  Status Commit() override {
    if (fd_ < 0) return Internal("{}: committed twice", path_);
    if (::fsync(fd_) != 0) return ErrnoStatus("cannot flush", partial_, errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoStatus("cannot close", partial_, errno);
    if (::rename(partial_.c_str(), path_.c_str()) != 0)
      return ErrnoStatus("cannot rename onto", path_, errno);
    return OkStatus();
  }

 private:
  std::string path_;
  std::string partial_;
  int fd_;
  uint64_t resume_offset_;
};

}  // namespace

Status CheckRelativeKey(std::string_view key) {
  if (key.empty()) return InvalidArgument("empty object key");
  if (key.front() == '/') return InvalidArgument("object key '{}' starts with '/'", key);
  std::string_view rest = key;
  while (true) {
    const size_t slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    if (segment.empty() || segment == "." || segment == "..") {
      return InvalidArgument(
          "object key '{}' has an empty, '.' or '..' path segment; it would not map onto a "
          "file below the destination directory",
          key);
    }
    if (segment.find('\0') != std::string_view::npos) return InvalidArgument("object key holds a NUL byte");
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return OkStatus();
}

Result<std::string> FileStore::PathOf(std::string_view key) const {
  K3_RETURN_IF_ERROR(CheckRelativeKey(key));
  return JoinKey(root_, key);
}

std::string FileStore::Describe(std::string_view key) const { return JoinKey(root_, key); }

Result<std::vector<ObjectInfo>> FileStore::List(std::string_view prefix) {
  std::vector<ObjectInfo> out;
  std::error_code ec;
  const fs::file_status root_status = fs::status(root_, ec);
  if (ec || !fs::exists(root_status)) return NotFound("{}: no such directory", root_);
  if (!fs::is_directory(root_status)) return InvalidArgument("{}: not a directory", root_);
  fs::recursive_directory_iterator it(root_, fs::directory_options::none, ec);
  if (ec) return IoError("cannot list {}: {}", root_, ec.message());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return IoError("cannot list {}: {}", root_, ec.message());
    if (!it->is_regular_file(ec)) continue;
    std::string key = fs::relative(it->path(), root_, ec).generic_string();
    if (ec) return IoError("cannot list {}: {}", root_, ec.message());
    if (!key.starts_with(prefix) || IsPartialStateKey(key)) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0) return ErrnoStatus("cannot stat", it->path().string(), errno);
    out.push_back(ObjectInfo{std::move(key), static_cast<uint64_t>(st.st_size), "", ModificationTime(st)});
  }
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Result<ObjectInfo> FileStore::Stat(std::string_view key) {
  K3_ASSIGN_OR_RETURN(const std::string path, PathOf(key));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument("{}: not a regular file", path);
  return ObjectInfo{std::string(key), static_cast<uint64_t>(st.st_size), "", ModificationTime(st)};
}

Status FileStore::ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) {
  K3_ASSIGN_OR_RETURN(const std::string path, PathOf(key));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open", path, errno);
  size_t done = 0;
  Status status;
  while (done < dst.size()) {
    const ssize_t n = ::pread(fd, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = ErrnoStatus("cannot read", path, errno);
      break;
    }
    if (n == 0) {
      status = DataLoss("{}: ends at byte {}, before the end of the range [{}, {})", path, offset + done,
                        offset, offset + dst.size());
      break;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return status;
}

Result<std::unique_ptr<ObjectWriter>> FileStore::OpenWriter(std::string_view key,
                                                            const WriteOptions& options) {
  K3_ASSIGN_OR_RETURN(const std::string path, PathOf(key));
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return IoError("cannot create the directory of {}: {}", path, ec.message());
  const std::string partial = path + std::string(kPartialFileSuffix);
  uint64_t resume_offset = 0;
  if (options.resume) {
    struct stat st {};
    if (::stat(partial.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      resume_offset = static_cast<uint64_t>(st.st_size);
      // A partial file longer than the object cannot belong to it: start over.
      if (options.expected_size != 0 && resume_offset > options.expected_size) resume_offset = 0;
    }
  }
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (resume_offset == 0 ? O_TRUNC : 0);
  const int fd = ::open(partial.c_str(), flags, 0644);
  if (fd < 0) return ErrnoStatus("cannot create", partial, errno);
  if (resume_offset != 0 && ::lseek(fd, static_cast<off_t>(resume_offset), SEEK_SET) < 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus("cannot seek in", partial, err);
  }
  return std::unique_ptr<ObjectWriter>(new FileWriter(path, partial, fd, resume_offset));
}

Status FileStore::Delete(std::string_view key) {
  K3_ASSIGN_OR_RETURN(const std::string path, PathOf(key));
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("cannot delete", path, errno);
  return OkStatus();
}

}  // namespace k3::storage
