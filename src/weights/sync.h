// SyncWeights: copies every object below one store's root to another's (`k3 weights sync SRC DST`).
//
//   - Skips a file the destination already holds identically: the same size as the source, and the
//     destination's manifest (from an earlier sync) or the journal of an interrupted one lists it with
//     that size and the source version (ETag or modification time) the source still reports.
//   - Resumes a partial copy: the destination writer's partial state (a .k3partial file, an S3 multipart
//     journal) says how many bytes are stored; only the rest is transferred (the stored prefix is
//     re-read from the source for the checksum, and counted apart as rehashed bytes).
//   - Reads each file with parallel ranged requests under an in-flight byte bound (range_fetcher.h) and
//     writes it in order, hashing it (SHA-256) on the way.
//   - Removes the destination's old manifest before changing any file and writes the new one last, so a
//     destination with a manifest is a finished copy.
//   - With delete_extraneous (`--delete`, as `aws s3 sync --delete`): removes the destination's files
//     the source does not have, after every copy and before the new manifest.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "src/base/status.h"
#include "src/storage/object_store.h"
#include "src/storage/range_fetcher.h"

namespace k3::weights {

struct SyncProgress {
  uint64_t total_bytes = 0;        // of every source file
  uint64_t done_bytes = 0;         // skipped + already stored + copied so far
  uint64_t transferred_bytes = 0;  // written to the destination by this run
  int files_total = 0;
  int files_done = 0;
  std::string current;  // the file being copied
};

struct SyncOptions {
  storage::ParallelReadOptions read;
  bool resume = true;
  bool delete_extraneous = false;  // remove destination files the source lacks
  // Called after every chunk and file; returning false stops the sync (as a kill would: partial state
  // stays for the next run, no manifest is written).
  std::function<bool(const SyncProgress&)> on_progress;
  std::string source_description;  // recorded in the manifest ("s3://bucket/prefix")
};

struct SyncReport {
  int files_copied = 0;
  int files_skipped = 0;
  uint64_t bytes_transferred = 0;  // written to the destination by this run
  uint64_t bytes_skipped = 0;      // of files that were already identical
  uint64_t bytes_resumed = 0;      // already stored by an interrupted earlier run
  uint64_t bytes_rehashed = 0;     // read from the source again to checksum a resumed prefix
  int files_deleted = 0;           // destination files the source lacks (delete_extraneous)
};

Result<SyncReport> SyncWeights(storage::ObjectStore& source, storage::ObjectStore& destination,
                               const SyncOptions& options);

}  // namespace k3::weights
