// ReadRangesParallel and StreamObject (range_fetcher.h).
#include "src/storage/range_fetcher.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace k3::storage {

int ParallelReadOptions::EffectiveConcurrency() const {
  const uint64_t chunk = std::max<uint64_t>(chunk_bytes, 1);
  const uint64_t by_budget = std::max<uint64_t>(max_inflight_bytes / chunk, 1);
  return static_cast<int>(
      std::clamp<uint64_t>(by_budget, 1, static_cast<uint64_t>(std::max(concurrency, 1))));
}

Status ReadRangesParallel(ObjectStore& store, std::span<const RangeRead> ranges,
                          const ParallelReadOptions& options) {
  struct Piece {
    const RangeRead* range;
    uint64_t begin;  // within the range
    uint64_t size;
  };
  const uint64_t chunk = std::max<uint64_t>(options.chunk_bytes, 1);
  std::vector<Piece> pieces;
  for (const RangeRead& range : ranges) {
    for (uint64_t begin = 0; begin < range.dst.size(); begin += chunk) {
      pieces.push_back(Piece{&range, begin, std::min<uint64_t>(chunk, range.dst.size() - begin)});
    }
  }
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  std::atomic<bool> failed{false};
  auto work = [&] {
    while (!failed.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= pieces.size()) return;
      const Piece& p = pieces[i];
      Status status =
          store.ReadRange(p.range->key, p.range->offset + p.begin, p.range->dst.subspan(p.begin, p.size));
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = std::move(status);
        failed = true;
      }
    }
  };
  const size_t threads = std::min<size_t>(static_cast<size_t>(options.EffectiveConcurrency()), pieces.size());
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (std::thread& worker : workers) worker.join();
  return first_error;
}

Status StreamObject(ObjectStore& store, std::string_view key, uint64_t begin, uint64_t end,
                    const ParallelReadOptions& options, const ChunkConsumer& consume) {
  if (begin >= end) return OkStatus();
  const uint64_t chunk = std::max<uint64_t>(options.chunk_bytes, 1);
  const size_t num_chunks = static_cast<size_t>((end - begin + chunk - 1) / chunk);
  const size_t window = static_cast<size_t>(std::max<uint64_t>(options.max_inflight_bytes / chunk, 1));
  const std::string key_copy(key);

  std::mutex mu;
  std::condition_variable changed;
  size_t next_to_fetch = 0;
  size_t consumed = 0;  // chunks handed to consume and released
  std::map<size_t, std::vector<uint8_t>> ready;
  Status error;
  bool stop = false;

  auto work = [&] {
    while (true) {
      size_t index;
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(
            lock, [&] { return stop || next_to_fetch >= num_chunks || next_to_fetch < consumed + window; });
        if (stop || next_to_fetch >= num_chunks) return;
        index = next_to_fetch++;
      }
      const uint64_t offset = begin + index * chunk;
      std::vector<uint8_t> buffer(static_cast<size_t>(std::min(chunk, end - offset)));
      Status status = store.ReadRange(key_copy, offset, buffer);
      std::lock_guard<std::mutex> lock(mu);
      if (!status.ok()) {
        if (error.ok()) error = std::move(status);
        stop = true;
      } else {
        ready.emplace(index, std::move(buffer));
      }
      changed.notify_all();
    }
  };
  const size_t threads =
      std::min<size_t>({static_cast<size_t>(std::max(options.concurrency, 1)), window, num_chunks});
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t) workers.emplace_back(work);

  for (size_t index = 0; index < num_chunks; ++index) {
    std::vector<uint8_t> buffer;
    {
      std::unique_lock<std::mutex> lock(mu);
      changed.wait(lock, [&] { return stop || ready.count(index) != 0; });
      if (stop) break;
      buffer = std::move(ready[index]);
      ready.erase(index);
    }
    Status status = consume(begin + index * chunk, buffer);
    std::lock_guard<std::mutex> lock(mu);
    consumed = index + 1;
    if (!status.ok()) {
      if (error.ok()) error = std::move(status);
      stop = true;
    }
    changed.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    changed.notify_all();
  }
  for (std::thread& worker : workers) worker.join();
  return error;
}

}  // namespace k3::storage
