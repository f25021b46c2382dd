// k3-manifest.json (de)serialisation (manifest.h).
#include "src/weights/manifest.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace k3::weights {

using json = nlohmann::json;

const ManifestEntry* WeightsManifest::Find(std::string_view path) const {
  for (const ManifestEntry& entry : files) {
    if (entry.path == path) return &entry;
  }
  return nullptr;
}

uint64_t WeightsManifest::TotalBytes() const {
  uint64_t total = 0;
  for (const ManifestEntry& entry : files) total += entry.size;
  return total;
}

std::string ManifestToJson(const WeightsManifest& manifest) {
  json files = json::array();
  for (const ManifestEntry& entry : manifest.files) {
    files.push_back({{"path", entry.path},
                     {"size", entry.size},
                     {"sha256", entry.sha256},
                     {"source_version", entry.source_version}});
  }
  const json out = {{"format", kManifestFormat},
                    {"source", manifest.source},
                    {"total_bytes", manifest.TotalBytes()},
                    {"files", std::move(files)}};
  return out.dump(2) + "\n";
}

Result<WeightsManifest> ParseManifest(std::string_view text, std::string_view what) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return DataLoss("{}: not a JSON object", what);
  if (doc.value("format", "") != kManifestFormat) {
    return DataLoss("{}: \"format\" is not \"{}\"", what, kManifestFormat);
  }
  WeightsManifest manifest;
  if (doc.contains("source") && doc["source"].is_string()) manifest.source = doc["source"].get<std::string>();
  if (!doc.contains("files") || !doc["files"].is_array())
    return DataLoss("{}: \"files\" is not an array", what);
  for (const json& file : doc["files"]) {
    if (!file.is_object() || !file.contains("path") || !file["path"].is_string() || !file.contains("size") ||
        !file["size"].is_number_unsigned() || !file.contains("sha256") || !file["sha256"].is_string()) {
      return DataLoss("{}: a \"files\" entry lacks a string path, an unsigned size or a string sha256", what);
    }
    ManifestEntry entry;
    entry.path = file["path"].get<std::string>();
    entry.size = file["size"].get<uint64_t>();
    entry.sha256 = file["sha256"].get<std::string>();
    if (file.contains("source_version") && file["source_version"].is_string()) {
      entry.source_version = file["source_version"].get<std::string>();
    }
    if (entry.sha256.size() != 64 || !std::all_of(entry.sha256.begin(), entry.sha256.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        })) {
      return DataLoss("{}: '{}' has sha256 '{}', expected 64 lower-case hex digits", what, entry.path,
                      entry.sha256);
    }
    if (manifest.Find(entry.path) != nullptr) return DataLoss("{}: '{}' is listed twice", what, entry.path);
    manifest.files.push_back(std::move(entry));
  }
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestEntry& a, const ManifestEntry& b) { return a.path < b.path; });
  return manifest;
}

}  // namespace k3::weights
