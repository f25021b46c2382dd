// SyncWeights (sync.h).
#include "src/weights/sync.h"

#include <map>
#include <set>

#include "src/base/sha256.h"
#include "src/weights/manifest.h"

namespace k3::weights {
namespace {

using storage::ObjectInfo;
using storage::ObjectStore;

std::string SourceVersion(const ObjectInfo& info) {
  return info.etag.empty() ? info.last_modified : info.etag;
}

Status Stopped() { return Status(StatusCode::kResourceExhausted, "sync stopped before it finished"); }

// A manifest-shaped object of the destination (the manifest of an earlier finished sync, or the journal
// of an interrupted one), or an empty manifest.
WeightsManifest ReadManifestObject(ObjectStore& destination, const std::string& key) {
  auto text = destination.ReadAll(key);
  if (!text.ok()) return {};
  auto manifest = ParseManifest(*text, destination.Describe(key));
  return manifest.ok() ? std::move(manifest).value() : WeightsManifest{};
}

Status WriteText(ObjectStore& destination, const std::string& key, const std::string& text) {
  return destination.WriteAll(
      key, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

class Copier {
 public:
  Copier(ObjectStore& source, ObjectStore& destination, const SyncOptions& options, SyncProgress* progress,
         SyncReport* report)
      : source_(source), destination_(destination), options_(options), progress_(progress), report_(report) {}

  // Copies one file; returns its SHA-256.
  Result<std::string> Copy(const ObjectInfo& file) {
    storage::WriteOptions write_options;
    write_options.expected_size = file.size;
    write_options.resume = options_.resume;
    K3_ASSIGN_OR_RETURN(std::unique_ptr<storage::ObjectWriter> writer,
                        destination_.OpenWriter(file.key, write_options));
    const uint64_t resume = std::min(writer->resume_offset(), file.size);
    Sha256 hash;
    if (resume > 0) {
      // The stored prefix is not transferred again, only hashed from the source.
      K3_RETURN_IF_ERROR(storage::StreamObject(source_, file.key, 0, resume, options_.read,
                                               [&](uint64_t, std::span<const uint8_t> data) {
                                                 hash.Update(data);
                                                 return OkStatus();
                                               }));
      report_->bytes_resumed += resume;
      report_->bytes_rehashed += resume;
      progress_->done_bytes += resume;
    }
    uint64_t written = 0;
    K3_RETURN_IF_ERROR(storage::StreamObject(source_, file.key, resume, file.size, options_.read,
                                             [&](uint64_t, std::span<const uint8_t> data) -> Status {
                                               hash.Update(data);
                                               K3_RETURN_IF_ERROR(writer->Append(data));
                                               written += data.size();
                                               report_->bytes_transferred += data.size();
                                               progress_->transferred_bytes += data.size();
                                               progress_->done_bytes += data.size();
                                               return Report() ? OkStatus() : Stopped();
                                             }));
    if (resume + written != file.size) {
      return DataLoss("{}: copied {} bytes, the source listed {}", source_.Describe(file.key),
                      resume + written, file.size);
    }
    std::string sha256 = hash.FinishHex();
    K3_RETURN_IF_ERROR(writer->Commit());
    if (!file.sha256.empty() && sha256 != file.sha256) {
      // Committed first so that no partial state is left for a resume to reuse; then removed.
      K3_RETURN_IF_ERROR(destination_.Delete(file.key));
      return DataLoss(
          "{}: the copy's SHA-256 is {} but the source publishes {}; the download was corrupted or the file "
          "changed while it was read; fix: run the sync again (the copy was removed)",
          source_.Describe(file.key), sha256, file.sha256);
    }
    return sha256;
  }

  bool Report() { return !options_.on_progress || options_.on_progress(*progress_); }

 private:
  ObjectStore& source_;
  ObjectStore& destination_;
  const SyncOptions& options_;
  SyncProgress* progress_;
  SyncReport* report_;
};

}  // namespace

Result<SyncReport> SyncWeights(ObjectStore& source, ObjectStore& destination, const SyncOptions& options) {
  K3_ASSIGN_OR_RETURN(std::vector<ObjectInfo> listed, source.List(""));
  std::vector<ObjectInfo> files;
  for (ObjectInfo& info : listed) {
    if (info.key != kManifestName) files.push_back(std::move(info));  // the destination gets its own
  }
  if (files.empty()) return NotFound("{}: no objects to copy", source.Describe());

  std::map<std::string, ObjectInfo> present;
  if (auto existing = destination.List(""); existing.ok()) {
    for (ObjectInfo& info : *existing) present.emplace(info.key, std::move(info));
  } else if (existing.status().code() != StatusCode::kNotFound) {
    return existing.status();
  }
  // What earlier runs left whole: the finished manifest, plus the journal of files an interrupted run
  // committed (hidden from List like every partial state).
  WeightsManifest old_manifest = ReadManifestObject(destination, kManifestName);
  for (ManifestEntry& entry : ReadManifestObject(destination, kSyncJournalName).files) {
    if (old_manifest.Find(entry.path) == nullptr) old_manifest.files.push_back(std::move(entry));
  }

  SyncReport report;
  SyncProgress progress;
  progress.files_total = static_cast<int>(files.size());
  for (const ObjectInfo& file : files) progress.total_bytes += file.size;

  WeightsManifest manifest;
  manifest.source = options.source_description.empty() ? source.Describe() : options.source_description;
  std::vector<const ObjectInfo*> to_copy;
  for (const ObjectInfo& file : files) {
    const ManifestEntry* old = old_manifest.Find(file.key);
    const auto there = present.find(file.key);
    const bool identical = old != nullptr && there != present.end() && there->second.size == file.size &&
                           old->size == file.size && old->source_version == SourceVersion(file);
    if (identical) {
      manifest.files.push_back(*old);
      ++report.files_skipped;
      report.bytes_skipped += file.size;
      progress.done_bytes += file.size;
      ++progress.files_done;
    } else {
      to_copy.push_back(&file);
    }
  }
  std::vector<std::string> to_delete;
  if (options.delete_extraneous) {
    std::set<std::string> in_source;
    for (const ObjectInfo& file : files) in_source.insert(file.key);
    for (const auto& [key, info] : present) {
      if (key != kManifestName && key != kSyncJournalName && in_source.count(key) == 0)
        to_delete.push_back(key);
    }
  }
  const bool changes = !to_copy.empty() || !to_delete.empty();
  // From here on the destination changes: it is not a finished copy until the new manifest is written.
  if (changes && present.count(kManifestName) != 0) K3_RETURN_IF_ERROR(destination.Delete(kManifestName));

  Copier copier(source, destination, options, &progress, &report);
  for (const ObjectInfo* file : to_copy) {
    progress.current = file->key;
    if (!copier.Report()) return Stopped();
    K3_ASSIGN_OR_RETURN(std::string sha256, copier.Copy(*file));
    manifest.files.push_back(ManifestEntry{file->key, file->size, std::move(sha256), SourceVersion(*file)});
    K3_RETURN_IF_ERROR(WriteText(destination, kSyncJournalName, ManifestToJson(manifest)));
    ++report.files_copied;
    ++progress.files_done;
    if (!copier.Report()) return Stopped();
  }
  for (const std::string& key : to_delete) {
    K3_RETURN_IF_ERROR(destination.Delete(key));
    ++report.files_deleted;
  }
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestEntry& a, const ManifestEntry& b) { return a.path < b.path; });
  if (!changes && present.count(kManifestName) != 0) return report;  // nothing changed
  K3_RETURN_IF_ERROR(WriteText(destination, kManifestName, ManifestToJson(manifest)));
  K3_RETURN_IF_ERROR(destination.Delete(kSyncJournalName));
  return report;
}

}  // namespace k3::weights
