// ReadShardPrefix: the first bytes of a safetensors shard in an object store, up to the end of its JSON
// header (the 8-byte length, then the header), read with two ranged requests and the length checked
// against the file's size. `k3 weights verify` checks headers this way, and an expert-parallel rank
// loading from a bucket reads it to find the byte ranges of its tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/storage/object_store.h"

namespace k3::weights {

// `file_size` is the object's size (from List or Stat). DataLoss naming the object when it is shorter than
// the length field or announces a header that does not fit; the store's error when a read fails.
Result<std::vector<uint8_t>> ReadShardPrefix(storage::ObjectStore& store, const std::string& key,
                                             uint64_t file_size);

}  // namespace k3::weights
