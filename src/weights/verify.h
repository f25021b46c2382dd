// VerifyWeights: checks a checkpoint in any ObjectStore without loading it (`k3 weights verify URI`):
//   - k3-manifest.json exists (a finished sync) and every file it lists is there with its size; with
//     checksums, every file's SHA-256 is recomputed (the whole checkpoint is read);
//   - every *.safetensors header passes the loader's strict checks (src/io/safetensors.h) against the
//     object's real size, reading only the header bytes;
//   - model.safetensors.index.json agrees with the shards: each tensor it names is in the named shard,
//     each shard's tensors are in the index, no tensor is in two shards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/storage/object_store.h"
#include "src/storage/range_fetcher.h"

namespace k3::weights {

struct VerifyOptions {
  bool checksums = false;
  storage::ParallelReadOptions read;
};

struct VerifyReport {
  std::vector<std::string> problems;  // one line each, naming the file
  int files_checked = 0;
  int headers_checked = 0;
  int tensors_checked = 0;
  uint64_t bytes_hashed = 0;
  bool ok() const { return problems.empty(); }
};

// Errors only when the store cannot be listed; everything wrong with the checkpoint is a problem line.
Result<VerifyReport> VerifyWeights(storage::ObjectStore& store, const VerifyOptions& options);

}  // namespace k3::weights
