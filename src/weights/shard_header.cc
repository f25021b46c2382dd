// ReadShardPrefix (shard_header.h).
#include "src/weights/shard_header.h"

#include "src/io/safetensors.h"

namespace k3::weights {

Result<std::vector<uint8_t>> ReadShardPrefix(storage::ObjectStore& store, const std::string& key,
                                             uint64_t file_size) {
  const std::string what = store.Describe(key);
  if (file_size < 8) {
    return DataLoss("{}: {} bytes, shorter than the 8-byte header length of a safetensors file", what,
                    file_size);
  }
  uint8_t length_bytes[8] = {0};
  K3_RETURN_IF_ERROR(store.ReadRange(key, 0, length_bytes));
  K3_ASSIGN_OR_RETURN(const uint64_t header_len,
                      io::SafetensorsFile::HeaderLength(length_bytes, 8, file_size, what));
  std::vector<uint8_t> prefix(8 + header_len);
  K3_RETURN_IF_ERROR(store.ReadRange(key, 0, prefix));
  return prefix;
}

}  // namespace k3::weights
