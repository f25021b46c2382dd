// VerifyWeights (verify.h).
#include "src/weights/verify.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "src/base/sha256.h"
#include "src/io/checkpoint.h"
#include "src/io/safetensors.h"
#include "src/weights/manifest.h"
#include "src/weights/shard_header.h"

namespace k3::weights {
namespace {

using storage::ObjectInfo;
using storage::ObjectStore;

// Reads and checks one shard's header; returns its tensor names.
Result<std::set<std::string>> CheckHeader(ObjectStore& store, const ObjectInfo& file) {
  const std::string what = store.Describe(file.key);
  K3_ASSIGN_OR_RETURN(const std::vector<uint8_t> prefix, ReadShardPrefix(store, file.key, file.size));
  K3_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsFile> parsed,
                      io::SafetensorsFile::ParseHeader(prefix.data(), prefix.size(), file.size, what));
  std::set<std::string> names;
  for (const auto& [name, view] : parsed->tensors()) names.insert(name);
  return names;
}

void CheckIndex(ObjectStore& store, const std::map<std::string, std::set<std::string>>& shards,
                VerifyReport* report) {
  const std::string what = store.Describe(io::kCheckpointIndexName);
  auto text = store.ReadAll(io::kCheckpointIndexName);
  if (!text.ok()) return report->problems.push_back(text.status().message());
  const nlohmann::json index = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    return report->problems.push_back(what + ": not a JSON object with a \"weight_map\" object");
  }
  std::map<std::string, std::string> shard_of;
  for (const auto& [tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) {
      report->problems.push_back(what + ": tensor '" + tensor + "' maps to a non-string");
      continue;
    }
    const std::string name = shard.get<std::string>();
    shard_of[tensor] = name;
    const auto it = shards.find(name);
    if (it == shards.end()) {
      report->problems.push_back(what + ": tensor '" + tensor + "' is in shard '" + name +
                                 "', which is missing or has a bad header");
    } else if (it->second.count(tensor) == 0) {
      report->problems.push_back(what + ": tensor '" + tensor + "' is not in shard '" + name + "'");
    }
  }
  std::map<std::string, std::string> seen;
  for (const auto& [shard, names] : shards) {
    for (const std::string& tensor : names) {
      if (auto [it, inserted] = seen.emplace(tensor, shard); !inserted) {
        report->problems.push_back(store.Describe(shard) + ": tensor '" + tensor + "' is also in '" +
                                   it->second + "'");
      }
      if (shard_of.count(tensor) == 0) {
        report->problems.push_back(store.Describe(shard) + ": tensor '" + tensor + "' is not in the index");
      }
    }
  }
}

}  // namespace

Result<VerifyReport> VerifyWeights(ObjectStore& store, const VerifyOptions& options) {
  K3_ASSIGN_OR_RETURN(std::vector<ObjectInfo> listed, store.List(""));
  std::map<std::string, ObjectInfo> files;
  for (ObjectInfo& info : listed) files.emplace(info.key, std::move(info));
  VerifyReport report;

  auto manifest_text = store.ReadAll(kManifestName);
  if (!manifest_text.ok()) {
    report.problems.push_back(store.Describe(kManifestName) + ": " +
                              (manifest_text.status().code() == StatusCode::kNotFound
                                   ? "missing: this is not a finished `k3 weights sync` destination"
                                   : manifest_text.status().message()));
  } else if (auto manifest = ParseManifest(*manifest_text, store.Describe(kManifestName)); !manifest.ok()) {
    report.problems.push_back(manifest.status().message());
  } else {
    for (const ManifestEntry& entry : manifest->files) {
      ++report.files_checked;
      const auto it = files.find(entry.path);
      if (it == files.end()) {
        report.problems.push_back(store.Describe(entry.path) + ": listed in the manifest but missing");
        continue;
      }
      if (it->second.size != entry.size) {
        report.problems.push_back(fmt::format("{}: {} bytes, the manifest says {}",
                                              store.Describe(entry.path), it->second.size, entry.size));
        continue;
      }
      if (!options.checksums) continue;
      Sha256 hash;
      Status read = storage::StreamObject(store, entry.path, 0, entry.size, options.read,
                                          [&](uint64_t, std::span<const uint8_t> data) {
                                            hash.Update(data);
                                            return OkStatus();
                                          });
      report.bytes_hashed += entry.size;
      if (!read.ok()) {
        report.problems.push_back(read.message());
      } else if (const std::string sha = hash.FinishHex(); sha != entry.sha256) {
        report.problems.push_back(fmt::format("{}: SHA-256 {} differs from the manifest's {}",
                                              store.Describe(entry.path), sha, entry.sha256));
      }
    }
  }

  std::map<std::string, std::set<std::string>> shards;
  for (const auto& [key, info] : files) {
    if (!key.ends_with(".safetensors")) continue;
    ++report.headers_checked;
    auto names = CheckHeader(store, info);
    if (!names.ok()) {
      report.problems.push_back(names.status().message());
      continue;
    }
    report.tensors_checked += static_cast<int>(names->size());
    shards.emplace(key, std::move(names).value());
  }
  if (files.count(io::kCheckpointIndexName) != 0) {
    CheckIndex(store, shards, &report);
  } else if (files.count(io::kCheckpointSingleName) == 0) {
    report.problems.push_back(store.Describe() + ": neither " + io::kCheckpointIndexName + " nor " +
                              io::kCheckpointSingleName + " is there");
  }
  return report;
}

}  // namespace k3::weights
