// Staging directories beside their destination and publishing them by rename (see staged_directory.h).
#include "src/model/staged_directory.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace k3::model {
namespace fs = std::filesystem;
namespace {

constexpr char kIndexFile[] = "model.safetensors.index.json";

// "out/" and "out" name the same directory; the staging name is built from the last component.
fs::path Normalized(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

bool IsShardFile(const fs::path& file) {
  const std::string name = file.filename().string();
  return name.starts_with("model") && name.ends_with(".safetensors");
}

Status RenameInto(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) return IoError("cannot move {} to {}: {}", from.string(), to.string(), ec.message());
  return OkStatus();
}

}  // namespace

Result<std::string> MakeStagingDirectory(const std::string& final_dir) {
  const fs::path target = Normalized(final_dir);
  if (target.empty()) return InvalidArgument("the output directory name is empty");
  std::error_code ec;
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) return IoError("cannot create directory {}: {}", parent.string(), ec.message());
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const fs::path staged =
        parent / fmt::format("{}.tmp-{}-{}", target.filename().string(), ::getpid(), counter.fetch_add(1));
    if (fs::create_directory(staged, ec)) return staged.string();
    if (ec) return IoError("cannot create directory {}: {}", staged.string(), ec.message());
  }
  return IoError("cannot find a free temporary directory name next to {}", target.string());
}

Status PublishStagedDirectory(const std::string& staged_dir, const std::string& final_dir) {
  const fs::path staged = Normalized(staged_dir), target = Normalized(final_dir);
  std::error_code ec;
  const bool exists = fs::exists(target, ec);
  if (ec) return IoError("cannot inspect {}: {}", target.string(), ec.message());
  if (exists && !fs::is_directory(target, ec)) {
    return InvalidArgument("{} exists and is not a directory", target.string());
  }
  // A missing or empty destination is replaced by the staged directory in one rename.
  if (!exists || fs::is_empty(target, ec)) {
    fs::rename(staged, target, ec);
    if (!ec) return OkStatus();
    if (!fs::exists(target)) {
      return IoError("cannot move {} to {}: {}", staged.string(), target.string(), ec.message());
    }
    // Someone created files there in the meantime: merge below.
  }

  // Overwrite: first make the old checkpoint incomplete (no index), drop its shards, then move the new
  // files in with the index last.
  fs::remove(target / kIndexFile, ec);
  if (ec) return IoError("cannot remove {}: {}", (target / kIndexFile).string(), ec.message());
  std::vector<fs::path> old_shards;
  for (const fs::directory_entry& entry : fs::directory_iterator(target, ec)) {
    if (entry.is_regular_file() && IsShardFile(entry.path())) old_shards.push_back(entry.path());
  }
  if (ec) return IoError("cannot list {}: {}", target.string(), ec.message());
  for (const fs::path& shard : old_shards) {
    fs::remove(shard, ec);
    if (ec) return IoError("cannot remove {}: {}", shard.string(), ec.message());
  }
  std::vector<fs::path> staged_files;
  for (const fs::directory_entry& entry : fs::directory_iterator(staged, ec)) {
    if (entry.path().filename() != kIndexFile) staged_files.push_back(entry.path());
  }
  if (ec) return IoError("cannot list {}: {}", staged.string(), ec.message());
  std::sort(staged_files.begin(), staged_files.end());
  if (fs::exists(staged / kIndexFile)) staged_files.push_back(staged / kIndexFile);
  for (const fs::path& file : staged_files) {
    K3_RETURN_IF_ERROR(RenameInto(file, target / file.filename()));
  }
  fs::remove(staged, ec);
  if (ec) return IoError("cannot remove {}: {}", staged.string(), ec.message());
  return OkStatus();
}

void RemoveStagingDirectory(const std::string& staged_dir) {
  std::error_code ec;
  fs::remove_all(staged_dir, ec);
}

}  // namespace k3::model
