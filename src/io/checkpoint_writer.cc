// ShardedCheckpointWriter: streams tensors into numbered safetensors shards and writes the index last,
// so an interrupted run never leaves a directory that opens as a complete checkpoint.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/io/checkpoint.h"

namespace k3::io {
namespace {

std::string ShardName(size_t index, size_t count) {
  return fmt::format("model-{:05d}-of-{:05d}.safetensors", index + 1, count);
}

}  // namespace

ShardedCheckpointWriter::ShardedCheckpointWriter(std::string dir, uint64_t max_shard_bytes)
    : dir_(std::move(dir)), max_shard_bytes_(max_shard_bytes) {}

Status ShardedCheckpointWriter::Add(TensorToWrite tensor) {
  if (finished_) return Internal("{}: ShardedCheckpointWriter::Add after Finish", dir_);
  K3_RETURN_IF_ERROR(CheckTensorToWrite(dir_, tensor));
  if (!names_.insert(tensor.name).second) {
    return InvalidArgument("{}: tensor '{}' added twice; fix: write each tensor once", dir_, tensor.name);
  }
  const uint64_t bytes = tensor.data.size();
  if (!pending_.empty() && pending_bytes_ + bytes > max_shard_bytes_) K3_RETURN_IF_ERROR(FlushShard());
  pending_bytes_ += bytes;
  total_bytes_ += bytes;
  pending_.push_back(std::move(tensor));
  return OkStatus();
}

Status ShardedCheckpointWriter::FlushShard() {
  if (!started_) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      return IoError("{}: cannot create directory: {}; fix: check the path and permissions", dir_,
                     ec.message());
    // A stale index (or single file) would make a half-written directory look like a whole checkpoint.
    for (const char* stale : {kCheckpointIndexName, kCheckpointSingleName}) {
      std::filesystem::remove(dir_ + "/" + stale, ec);
      if (ec) return IoError("{}/{}: cannot remove the old file: {}", dir_, stale, ec.message());
    }
    started_ = true;
  }
  const std::string path = fmt::format("{}/model-{:05d}.safetensors.partial", dir_, shard_files_.size() + 1);
  K3_RETURN_IF_ERROR(WriteSafetensors(path, pending_, {{"format", "pt"}}));
  shard_files_.push_back(path);
  std::vector<std::string> names;
  names.reserve(pending_.size());
  for (const TensorToWrite& tensor : pending_) names.push_back(tensor.name);
  shard_names_.push_back(std::move(names));
  std::vector<TensorToWrite>().swap(pending_);  // release the shard's memory
  pending_bytes_ = 0;
  return OkStatus();
}

Status ShardedCheckpointWriter::Finish() {
  if (finished_) return Internal("{}: ShardedCheckpointWriter::Finish called twice", dir_);
  if (!pending_.empty() || shard_files_.empty()) K3_RETURN_IF_ERROR(FlushShard());
  finished_ = true;
  nlohmann::json weight_map = nlohmann::json::object();
  const size_t count = shard_files_.size();
  for (size_t i = 0; i < count; ++i) {
    const std::string name = ShardName(i, count);
    std::error_code ec;
    std::filesystem::rename(shard_files_[i], dir_ + "/" + name, ec);
    if (ec) return IoError("{}: cannot rename to {}: {}", shard_files_[i], name, ec.message());
    for (const std::string& tensor : shard_names_[i]) weight_map[tensor] = name;
  }
  const nlohmann::json index = {{"metadata", {{"total_size", total_bytes_}}}, {"weight_map", weight_map}};
  return WriteFileAtomic(dir_ + "/" + kCheckpointIndexName, index.dump(2) + "\n");
}

}  // namespace k3::io
