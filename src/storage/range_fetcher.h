// Parallel ranged reads from one ObjectStore, with a bound on the bytes in flight.
//
// A big object is read as chunk_bytes-sized ranged requests, `concurrency` of them at a time (object
// stores give each connection a fraction of their bandwidth; many parallel ranges fill the pipe).
//   ReadRangesParallel: many ranges straight into caller memory (the streaming model loader's case).
//   StreamObject: one object's bytes handed to a consumer strictly in order (copying, hashing), with at
//     most max_inflight_bytes fetched but not yet consumed.
// Workers are plain threads that block on network I/O; the kernels' ThreadPool (src/base) is a
// fork-join pool whose tasks must not block on each other, so it is not used here.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/storage/object_store.h"

namespace k3::storage {

struct ParallelReadOptions {
  int concurrency = 8;                                // requests in flight
  uint64_t chunk_bytes = uint64_t{8} << 20;           // bytes per request
  uint64_t max_inflight_bytes = uint64_t{256} << 20;  // fetched-but-unconsumed (or requested) bytes

  // Requests that may be in flight at once under both limits (at least 1).
  int EffectiveConcurrency() const;
};

struct RangeRead {
  std::string key;
  uint64_t offset = 0;
  std::span<uint8_t> dst;  // receives exactly dst.size() bytes
};

// Reads every range; returns the first error (the others stop at their next chunk).
Status ReadRangesParallel(ObjectStore& store, std::span<const RangeRead> ranges,
                          const ParallelReadOptions& options);

// Called with consecutive pieces of the object, in order; an error stops the stream.
using ChunkConsumer = std::function<Status(uint64_t offset, std::span<const uint8_t> data)>;

// Streams bytes [begin, end) of `key` through `consume`.
Status StreamObject(ObjectStore& store, std::string_view key, uint64_t begin, uint64_t end,
                    const ParallelReadOptions& options, const ChunkConsumer& consume);

}  // namespace k3::storage
