// Loading a model straight from object storage (k3 serve s3://bucket/prefix): config.json, the index,
// the tokenizer files and every safetensors shard are read into memory (no local copy of the weights),
// the shards as parallel ranged reads (storage::ReadRangesParallel) bounded by a request count and a
// bytes-in-flight limit, then checked exactly like a local directory (io::Checkpoint::FromMemory,
// Model::FromTensors). When the prefix holds k3-manifest.json (`k3 weights sync`), every file's size is
// checked against it first. Progress (bytes, rate, ETA) is logged at most every progress_interval.
// Errors name the object's URI (never credentials).
// A rank of an expert-parallel group (parallelism.shard) reads each shard's header, then only the byte
// ranges of its own routed experts and of every other tensor: with E experts over t ranks it skips
// (t-1)/t of the expert bytes. Other ranks (tensor parallel) read every shard whole.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "src/base/status.h"
#include "src/base/thread_pool.h"
#include "src/model/load_progress.h"
#include "src/model/model.h"
#include "src/model/rank_group.h"
#include "src/storage/object_store.h"

namespace k3::model {

struct RemoteLoadOptions {
  int concurrency = 8;                                // ranged requests in flight (--load-concurrency)
  uint64_t max_inflight_bytes = uint64_t{256} << 20;  // requested-but-unfinished bytes (--load-max-inflight)
  uint64_t chunk_bytes = uint64_t{8} << 20;           // bytes per ranged request
  std::chrono::milliseconds progress_interval{2000};
  LoadProgress* progress = nullptr;  // when set: the phase and every byte read are reported here too
};

// The small files a server needs besides the weights, read whole ("" when absent and optional).
struct RemoteModelFiles {
  std::string tokenizer_model;    // tiktoken.model
  std::string tokenizer_config;   // tokenizer_config.json
  std::string generation_config;  // generation_config.json; empty when the prefix has none
};

struct RemoteModel {
  std::unique_ptr<Model> model;  // owns (through FromTensors' storage) the shards' bytes
  RemoteModelFiles files;
};

// The tokenizer files are required (NotFound naming them otherwise).
Result<RemoteModel> LoadModelFromStore(storage::ObjectStore& store, ThreadPool* pool,
                                       const Parallelism& parallelism = {},
                                       const RemoteLoadOptions& options = {});

// One process of a group (or the only one) serving a model in a bucket: config.json is read first (the
// layout is checked against it before any rank waits for another), ranks compare a fingerprint of the
// build, config.json and the listing's shard sizes (dist::CheckpointFingerprint), and each rank then loads
// its shard with LoadModelFromStore (rank_group.h's JoinGroupAndLoadWith).
struct RemoteGroupMember {
  GroupMember member;
  RemoteModelFiles files;
};
Result<RemoteGroupMember> JoinGroupAndLoadFromStore(storage::ObjectStore& store, ThreadPool* pool,
                                                    const dist::GroupPlan& plan, const std::string& version,
                                                    std::function<void(const Status&)> on_failure,
                                                    const RemoteLoadOptions& options = {});

}  // namespace k3::model
