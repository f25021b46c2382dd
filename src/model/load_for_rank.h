// LoadForRank: this process's member of a model's group, loaded from wherever the model is: a checkpoint
// directory (every rank maps its shard of the local files; ranks compare a fingerprint of the build and
// the directory) or a bucket (s3://, gs://, oss://, az://: config.json first, then each rank reads only
// its own byte ranges, and the tokenizer and generation files come back with it). `k3 serve` and `k3 run`
// both load through it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "src/base/status.h"
#include "src/base/thread_pool.h"
#include "src/dist/launch.h"
#include "src/model/load_progress.h"
#include "src/model/rank_group.h"
#include "src/model/remote_checkpoint.h"
#include "src/storage/open_store.h"

namespace k3::model {

struct RankLoadOptions {
  std::string version;               // the build's version string (part of the group's fingerprint)
  storage::StoreOptions store;       // credentials and endpoints for a bucket
  RemoteLoadOptions remote;          // a bucket's read concurrency and progress (progress set from below)
  LoadProgress* progress = nullptr;  // when set: the phase and the bytes read
  std::function<void(const Status&)> on_failure;  // rank 0 of a group: called when the group breaks
};

struct RankLoad {
  GroupMember member;
  std::optional<RemoteModelFiles> remote_files;  // a bucket's tokenizer / generation files; nullopt for a dir
};

// The bucket a model source names, or nullopt for a local directory (a file:// URI counts as local).
std::optional<storage::ObjectUri> RemoteModelUri(const std::string& source);

Result<RankLoad> LoadForRank(const std::string& source, const dist::GroupPlan& group, ThreadPool* pool,
                             RankLoadOptions options);

}  // namespace k3::model
