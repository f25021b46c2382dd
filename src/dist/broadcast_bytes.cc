// BroadcastBytes: a length, then the payload, over Communicator::Broadcast (communicator.h).
#include <cstring>

#include "src/dist/communicator.h"

namespace k3::dist {

Status BroadcastBytes(Communicator& comm, std::string* bytes, int root, size_t max_bytes) {
  uint64_t size = comm.rank() == root ? bytes->size() : 0;
  uint8_t header[sizeof(size)];
  std::memcpy(header, &size, sizeof(size));
  K3_RETURN_IF_ERROR(comm.Broadcast(std::span<uint8_t>(header, sizeof(header)), root));
  std::memcpy(&size, header, sizeof(size));
  if (size > max_bytes) {
    return DataLoss("rank {}: a broadcast of {} bytes from rank {} is above the limit of {}", comm.rank(),
                    size, root, max_bytes);
  }
  if (comm.rank() != root) bytes->resize(size);
  if (size == 0) return OkStatus();
  return comm.Broadcast(std::span<uint8_t>(reinterpret_cast<uint8_t*>(bytes->data()), size), root);
}

}  // namespace k3::dist
