// S3Store's request and reply types (shared by s3_store.cc and s3_writer.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/storage/s3_store.h"

namespace k3::storage {

struct S3Store::Request {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE
  std::string full_key;        // key in the bucket; empty for bucket-level requests
  std::vector<std::pair<std::string, std::string>> query;  // any order; sorted and encoded when sent
  std::span<const uint8_t> body;
  std::string content_type;
  // Ranged GET straight into caller memory: the bytes [offset, offset + dst.size()).
  std::optional<uint64_t> range_offset;
  std::span<uint8_t> dst;
  std::string what;  // the object or bucket URI for messages
};

}  // namespace k3::storage
