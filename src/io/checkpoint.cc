// Checkpoint::Open / Get: one model.safetensors, or an index plus shards, checked against each other
// (see checkpoint.h). The writer side is checkpoint_writer.cc.
#include "src/io/checkpoint.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/io/json_fields.h"

namespace k3::io {
namespace {

using nlohmann::json;

// A shard name from the index must be a plain file name inside the checkpoint directory.
bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

std::string FileName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// The index's weight_map (index_path's `text`): tensor name -> shard file name, validated.
Result<std::map<std::string, std::string>> ParseWeightMap(const std::string& index_path,
                                                          const std::string& text) {
  json index;
  try {
    index = json::parse(text);
  } catch (const json::exception& e) {
    return DataLoss("{}: not valid JSON ({}); fix: re-download the index or regenerate the checkpoint",
                    index_path, e.what());
  }
  if (!index.is_object()) {
    return DataLoss("{}: is a JSON {}, expected an object with \"weight_map\"; fix: re-download it",
                    index_path, JsonKind(index));
  }
  auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object()) {
    return DataLoss(
        "{}: field 'weight_map' is {}, expected an object {{tensor name: shard file}}; fix: re-download "
        "the index",
        index_path,
        map_it == index.end() ? std::string("missing") : fmt::format("a JSON {}", JsonKind(*map_it)));
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [tensor, shard] : map_it->items()) {
    if (!shard.is_string()) {
      return DataLoss(
          "{}: weight_map['{}'] is a JSON {}, expected a shard file name; fix: re-download the index",
          index_path, tensor, JsonKind(shard));
    }
    const std::string& name = shard.get_ref<const std::string&>();
    if (!IsPlainFileName(name)) {
      return InvalidArgument(
          "{}: weight_map['{}'] is {}, which is not a file name inside the checkpoint "
          "directory; fix: shard names must not contain '/' or be '..'",
          index_path, tensor, JsonExcerpt(shard));
    }
    weight_map.emplace(tensor, name);
  }
  return weight_map;
}

}  // namespace

Result<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  Files files;
  files.exists = [&dir](const std::string& name) {
    std::error_code ec;
    return std::filesystem::exists(dir + "/" + name, ec);
  };
  files.read_text = [&dir](const std::string& name) { return ReadFileToString(dir + "/" + name); };
  files.open_shard = [&dir](const std::string& name) { return SafetensorsFile::Open(dir + "/" + name); };
  return OpenFrom(dir, files);
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::FromMemory(
    const std::string& location, const std::map<std::string, std::span<const uint8_t>>& files) {
  auto find = [&files, &location](const std::string& name) -> Result<std::span<const uint8_t>> {
    auto it = files.find(name);
    if (it == files.end()) return NotFound("{}/{} does not exist", location, name);
    return it->second;
  };
  Files source;
  source.exists = [&files](const std::string& name) { return files.count(name) > 0; };
  source.read_text = [&find](const std::string& name) -> Result<std::string> {
    K3_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, find(name));
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  source.open_shard = [&find,
                       &location](const std::string& name) -> Result<std::unique_ptr<SafetensorsFile>> {
    K3_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, find(name));
    return SafetensorsFile::Parse(bytes.data(), bytes.size(), location + "/" + name);
  };
  return OpenFrom(location, source);
}

Result<std::unique_ptr<Checkpoint>> Checkpoint::OpenFrom(const std::string& dir, const Files& files) {
  auto ckpt = std::unique_ptr<Checkpoint>(new Checkpoint());
  ckpt->dir_ = dir;
  const std::string index_path = dir + "/" + kCheckpointIndexName;
  if (files.exists(kCheckpointIndexName)) {
    K3_ASSIGN_OR_RETURN(std::string index_text, files.read_text(kCheckpointIndexName));
    K3_ASSIGN_OR_RETURN(auto weight_map, ParseWeightMap(index_path, index_text));
    std::map<std::string, SafetensorsFile*> shard_by_name;
    for (const auto& [tensor, shard] : weight_map) {
      if (shard_by_name.count(shard) > 0) continue;
      auto file = files.open_shard(shard);
      if (!file.ok()) {
        if (file.status().code() == StatusCode::kNotFound) {
          return NotFound(
              "{}: tensor '{}' is in shard {}, but {}/{} does not exist; fix: download the missing "
              "shard (or regenerate the checkpoint)",
              index_path, tensor, shard, dir, shard);
        }
        return file.status();
      }
      shard_by_name[shard] = file->get();
      ckpt->shards_.push_back(std::move(file).value());
    }
    for (const auto& [tensor, shard] : weight_map) {
      if (shard_by_name[shard]->Find(tensor) == nullptr) {
        return NotFound(
            "{}: tensor '{}' is mapped to {}, but that shard does not contain it; fix: re-download the "
            "index and its shards together",
            index_path, tensor, shard);
      }
    }
  } else if (files.exists(kCheckpointSingleName)) {
    K3_ASSIGN_OR_RETURN(auto file, files.open_shard(kCheckpointSingleName));
    ckpt->shards_.push_back(std::move(file));
  } else {
    return NotFound(
        "{}: holds neither {} nor {}; fix: point at a Hugging Face checkpoint directory (or create one "
        "with `k3 gen-model`)",
        dir, kCheckpointIndexName, kCheckpointSingleName);
  }

  for (const auto& shard : ckpt->shards_) {
    const std::string shard_name = FileName(shard->path());
    for (const auto& [name, view] : shard->tensors()) {
      auto [it, inserted] = ckpt->by_name_.emplace(name, &view);
      if (!inserted) {
        return DataLoss(
            "{}: tensor '{}' is defined in both {} and {}; fix: re-download the checkpoint (a shard is "
            "stale or misplaced)",
            dir, name, ckpt->shard_of_[it->second], shard_name);
      }
      ckpt->shard_of_[&view] = shard_name;
    }
  }
  return ckpt;
}

const TensorView* Checkpoint::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Result<const TensorView*> Checkpoint::Get(const std::string& name, DType dtype,
                                          const std::vector<int64_t>& shape) const {
  const TensorView* view = Find(name);
  if (view == nullptr) {
    return NotFound(
        "{}: tensor '{}' is not in the checkpoint ({} tensors); fix: check that config.json matches "
        "the weights (model_type, layer count, quantization)",
        dir_, name, by_name_.size());
  }
  const std::string& shard = shard_of_.at(view);
  if (view->dtype != dtype || view->shape != shape) {
    return InvalidArgument(
        "{}: tensor '{}' has dtype {} shape {}, expected {} [{}]; fix: the checkpoint does not "
        "match config.json (or is not a supported export)",
        shard, name, DTypeName(view->dtype), view->ShapeString(), DTypeName(dtype), fmt::join(shape, ", "));
  }
  if (reinterpret_cast<uintptr_t>(view->data) % DTypeSize(view->dtype) != 0) {
    return InvalidArgument(
        "{}: tensor '{}' ({}) starts at a byte offset not aligned to its {}-byte elements; fix: "
        "rewrite the file with a standard safetensors writer",
        shard, name, DTypeName(view->dtype), DTypeSize(view->dtype));
  }
  return view;
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, view] : by_name_) total += view->nbytes;
  return total;
}

uint64_t Checkpoint::file_bytes() const {
  uint64_t total = 0;
  for (const auto& shard : shards_) total += shard->file_size();
  return total;
}

}  // namespace k3::io
