// Checkpoint: every tensor of a Hugging Face checkpoint directory, over one or many safetensors shards.
//
// A directory holds either model.safetensors, or model.safetensors.index.json
//   {"metadata": {"total_size": N}, "weight_map": {"tensor name": "model-00001-of-00002.safetensors"}}
// plus its shards. Every shard is mapped read-only; tensors are used in place. The index is checked
// against the shards: a tensor the index names must be in that shard, and shards may not define the same
// tensor twice.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/io/dtype.h"
#include "src/io/safetensors.h"

namespace k3::io {

// The two layouts' file names: one file, or the index naming the shards.
inline constexpr const char* kCheckpointSingleName = "model.safetensors";
inline constexpr const char* kCheckpointIndexName = "model.safetensors.index.json";

class Checkpoint {
 public:
  static Result<std::unique_ptr<Checkpoint>> Open(const std::string& dir);
  // The same checks over files already in memory (read from object storage): file name -> bytes, which
  // must outlive the Checkpoint. `location` (a URI) prefixes messages the way `dir` does for Open.
  static Result<std::unique_ptr<Checkpoint>> FromMemory(
      const std::string& location, const std::map<std::string, std::span<const uint8_t>>& files);

  const std::string& dir() const { return dir_; }
  const TensorView* Find(const std::string& name) const;
  // Error naming the tensor (and the shard it came from) unless it exists with exactly this dtype/shape
  // and its data is aligned to the element size (NotFound when missing, InvalidArgument otherwise).
  Result<const TensorView*> Get(const std::string& name, DType dtype,
                                const std::vector<int64_t>& shape) const;
  const std::map<std::string, const TensorView*>& tensors() const { return by_name_; }
  // Sum of all tensors' byte sizes.
  uint64_t total_bytes() const;
  // Bytes of all shard files (what loading reads).
  uint64_t file_bytes() const;

 private:
  // Where Open and FromMemory get the index and the shards from (names are plain file names).
  struct Files {
    std::function<bool(const std::string&)> exists;
    std::function<Result<std::string>(const std::string&)> read_text;
    std::function<Result<std::unique_ptr<SafetensorsFile>>(const std::string&)> open_shard;
  };
  static Result<std::unique_ptr<Checkpoint>> OpenFrom(const std::string& dir, const Files& files);

  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const TensorView*> by_name_;
  std::map<const TensorView*, std::string> shard_of_;
};

// Streams tensors into shards of at most `max_shard_bytes` each (a larger tensor gets a shard of its
// own), named model-0000i-of-0000n.safetensors, plus model.safetensors.index.json. Only one shard's
// tensors are held in memory at a time. Finish() writes the index; without it the directory holds no
// index and Checkpoint::Open fails on it (never a half-written checkpoint that looks whole): an index or
// model.safetensors already in the directory is removed before the first shard is written. Shards carry
// the metadata {"format": "pt"} that transformers expects.
class ShardedCheckpointWriter {
 public:
  ShardedCheckpointWriter(std::string dir, uint64_t max_shard_bytes);
  Status Add(TensorToWrite tensor);
  Status Finish();

 private:
  Status FlushShard();
  std::string dir_;
  uint64_t max_shard_bytes_;
  std::vector<TensorToWrite> pending_;
  uint64_t pending_bytes_ = 0;
  std::vector<std::string> shard_files_;               // temporary names, renamed in Finish()
  std::vector<std::vector<std::string>> shard_names_;  // tensor names per shard
  uint64_t total_bytes_ = 0;
  std::set<std::string> names_;  // every tensor added, to reject duplicates
  bool started_ = false;         // the old index has been removed
  bool finished_ = false;
};

}  // namespace k3::io
