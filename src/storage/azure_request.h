// AzureStore's request and reply types (shared by azure_store.cc and azure_writer.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/storage/azure_store.h"

namespace k3::storage {

struct AzureStore::Request {
  std::string method = "GET";  // GET, HEAD, PUT, DELETE
  std::string blob;            // blob name in the container; empty for container-level requests
  std::vector<std::pair<std::string, std::string>> query;    // values not encoded; encoded when sent
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (x-ms-blob-type, ...)
  std::span<const uint8_t> body;
  // Ranged GET straight into caller memory: the bytes [offset, offset + dst.size()).
  std::optional<uint64_t> range_offset;
  std::span<uint8_t> dst;
  std::string what;  // the blob or container URI for messages
};

}  // namespace k3::storage
