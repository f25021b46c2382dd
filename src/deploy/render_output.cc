// Output folder checks for `k3 render` (see render_output.h).
#include "src/deploy/render_output.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace k3::deploy {

Result<std::vector<std::string>> PrepareOutputDir(const std::string& dir,
                                                  const std::vector<RenderedFile>& files, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return InvalidArgument("--out {}: cannot create the directory: {}", dir, ec.message());
  if (!fs::is_directory(dir, ec)) return InvalidArgument("--out {}: not a directory", dir);
  std::set<std::string> written;
  for (const RenderedFile& f : files) written.insert(f.path);
  std::vector<std::string> stray_files, stray_dirs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (written.count(name)) continue;
    const bool is_dir = it->is_directory(ec) && !it->is_symlink(ec);
    (is_dir ? stray_dirs : stray_files).push_back(name);
  }
  if (ec) return InvalidArgument("--out {}: cannot list it: {}", dir, ec.message());
  std::sort(stray_files.begin(), stray_files.end());
  std::sort(stray_dirs.begin(), stray_dirs.end());
  auto join = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  if (!stray_dirs.empty()) {
    return InvalidArgument(
        "--out {}: holds folders this render does not write ({}); render into an empty or new folder", dir,
        join(stray_dirs));
  }
  if (stray_files.empty()) return stray_files;
  if (!force) {
    return InvalidArgument(
        "--out {}: holds files this render does not write ({}), which `kubectl apply -f` and cleanup.sh "
        "would meet; render into an empty folder, or pass --force to delete them",
        dir, join(stray_files));
  }
  for (const std::string& name : stray_files) {
    fs::remove(fs::path(dir) / name, ec);
    if (ec) return InvalidArgument("--out {}: cannot delete {}: {}", dir, name, ec.message());
  }
  return stray_files;
}

}  // namespace k3::deploy
