// ParseHfTreePage and NextLinkUrl (hf_tree.h), with nlohmann::json (no exceptions).
#include "src/storage/hf_tree.h"

#include <nlohmann/json.hpp>

namespace k3::storage {
namespace {

// A non-negative integer member, or nullopt.
std::optional<uint64_t> SizeField(const nlohmann::json& object) {
  if (!object.is_object() || !object.contains("size")) return std::nullopt;
  const nlohmann::json& size = object["size"];
  if (size.is_number_unsigned()) return size.get<uint64_t>();
  if (size.is_number_integer() && size.get<int64_t>() >= 0) return static_cast<uint64_t>(size.get<int64_t>());
  return std::nullopt;
}

}  // namespace

Result<std::vector<HfTreeEntry>> ParseHfTreePage(std::string_view json, const std::string& what) {
  const nlohmann::json page = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!page.is_array()) return DataLoss("{}: the Hub's tree listing is not a JSON array", what);
  std::vector<HfTreeEntry> out;
  for (const nlohmann::json& entry : page) {
    if (!entry.is_object() || !entry.contains("type") || !entry["type"].is_string() ||
        !entry.contains("path") || !entry["path"].is_string()) {
      return DataLoss("{}: a tree entry without a string \"type\" and \"path\"", what);
    }
    if (entry["type"].get<std::string>() != "file") continue;
    HfTreeEntry file;
    file.path = entry["path"].get<std::string>();
    const bool lfs = entry.contains("lfs") && entry["lfs"].is_object();
    const auto size = SizeField(lfs ? entry["lfs"] : entry);
    if (file.path.empty() || !size) {
      return DataLoss("{}: the tree entry '{}' has no path or no non-negative size", what,
                      file.path.substr(0, 200));
    }
    file.size = *size;
    const nlohmann::json& ids = lfs ? entry["lfs"] : entry;
    if (ids.contains("oid") && ids["oid"].is_string()) file.oid = ids["oid"].get<std::string>();
    file.lfs = lfs;
    out.push_back(std::move(file));
  }
  return out;
}

std::string NextLinkUrl(std::string_view link_header) {
  // Link: <URL1>; rel="next", <URL2>; rel="last"
  size_t pos = 0;
  while (pos < link_header.size()) {
    const size_t open = link_header.find('<', pos);
    if (open == std::string_view::npos) return "";
    const size_t close = link_header.find('>', open);
    if (close == std::string_view::npos) return "";
    size_t end = link_header.find('<', close);
    if (end == std::string_view::npos) end = link_header.size();
    const std::string_view params = link_header.substr(close + 1, end - close - 1);
    if (params.find("rel=\"next\"") != std::string_view::npos ||
        params.find("rel=next") != std::string_view::npos) {
      return std::string(link_header.substr(open + 1, close - open - 1));
    }
    pos = end;
  }
  return "";
}

}  // namespace k3::storage
