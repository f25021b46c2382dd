// LoadModelFromStore (remote_checkpoint.h): small files whole, shards through ReadRangesParallel into
// buffers the model keeps, a counting store wrapper feeding the progress log, then the local checks.
#include "src/model/remote_checkpoint.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "src/base/huge_pages.h"
#include "src/dist/launch.h"
#include "src/io/checkpoint.h"
#include "src/io/model_config.h"
#include "src/io/safetensors.h"
#include "src/model/shard.h"
#include "src/model/tensors.h"
#include "src/storage/range_fetcher.h"
#include "src/weights/manifest.h"
#include "src/weights/shard_header.h"

namespace k3::model {
namespace {

// Forwards to a store and counts the bytes ReadRange delivered (for the progress log).
class CountingStore : public storage::ObjectStore {
 public:
  CountingStore(storage::ObjectStore& inner, LoadProgress* progress) : inner_(inner), progress_(progress) {}
  Result<std::vector<storage::ObjectInfo>> List(std::string_view prefix) override {
    return inner_.List(prefix);
  }
  Result<storage::ObjectInfo> Stat(std::string_view key) override { return inner_.Stat(key); }
  Status ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) override {
    Status status = inner_.ReadRange(key, offset, dst);
    if (status.ok()) {
      bytes_.fetch_add(dst.size(), std::memory_order_relaxed);
      if (progress_ != nullptr) progress_->AddBytes(dst.size());
    }
    return status;
  }
  Result<std::unique_ptr<storage::ObjectWriter>> OpenWriter(std::string_view key,
                                                            const storage::WriteOptions& options) override {
    return inner_.OpenWriter(key, options);
  }
  Status Delete(std::string_view key) override { return inner_.Delete(key); }
  std::string Describe(std::string_view key) const override { return inner_.Describe(key); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  storage::ObjectStore& inner_;
  LoadProgress* progress_;
  std::atomic<uint64_t> bytes_{0};
};

std::string MiB(uint64_t n) { return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20)); }

// Logs "loaded X of Y (R/s, ETA s)" every interval until stopped.
class ProgressLogger {
 public:
  ProgressLogger(const CountingStore& store, uint64_t total, std::chrono::milliseconds interval)
      : thread_([this, &store, total, interval] {
          const auto t0 = std::chrono::steady_clock::now();
          std::unique_lock lock(mu_);
          while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
            const uint64_t done = store.bytes();
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const double rate = s > 0 ? static_cast<double>(done) / s : 0;
            const double eta = rate > 0 ? static_cast<double>(total - std::min(done, total)) / rate : 0;
            spdlog::info("loading weights: {} of {} ({:.0f}%), {}/s, ETA {:.0f} s", MiB(done), MiB(total),
                         total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                         MiB(static_cast<uint64_t>(rate)), eta);
          }
        }) {}
  ~ProgressLogger() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

// The shard buffers and the checkpoint over them; the model keeps this alive.
// The shards' bytes on 2 MiB pages: on a VM the first touch of each 4 KiB page of a fresh heap block was
// most of a load's time (2.2 GB: 7.6 s of page faults against ~1.5 s on huge pages; bench/weights).
struct RemoteStorage {
  std::vector<HugePageBuffer> buffers;
  std::unique_ptr<io::Checkpoint> checkpoint;  // views into buffers
};

// `status` naming the object's URI (stores usually do already; then it is left as it is).
Status Named(const Status& status, const storage::ObjectStore& store, const std::string& key) {
  const std::string uri = store.Describe(key);
  return status.message().find(uri) != std::string::npos ? status : status.WithPrefix(uri);
}

Result<std::string> ReadSmall(storage::ObjectStore& store, const std::string& key) {
  auto text = store.ReadAll(key);
  if (!text.ok()) return Named(text.status(), store, key);
  return text;
}

// The shard names: the index's weight_map values, or model.safetensors. A malformed index yields what it
// can; io::Checkpoint::FromMemory then reports the problem with its details.
std::set<std::string> ShardNames(bool has_index, const std::string& index_text) {
  if (!has_index) return std::set<std::string>{io::kCheckpointSingleName};
  const nlohmann::json index = nlohmann::json::parse(index_text, nullptr, /*allow_exceptions=*/false);
  auto map = index.is_object() ? index.find("weight_map") : index.end();
  std::set<std::string> names;
  if (index.is_object() && map != index.end() && map->is_object()) {
    for (const auto& [tensor, shard] : map->items()) {
      if (!shard.is_string()) continue;
      const std::string& name = shard.get_ref<const std::string&>();
      // Only plain file names inside the prefix (the same rule as io::Checkpoint's).
      if (name.empty() || name == "." || name == ".." || name.find_first_of("/\\") != std::string::npos)
        continue;
      names.insert(name);
    }
  }
  return names;
}

// Bytes [begin, begin + size) of one shard.
struct ByteRange {
  uint64_t begin = 0;
  uint64_t size = 0;
};

// Ranges closer than this are read as one request (the gap's bytes are read and not used): the small
// tensors between two large ones would otherwise be requests of their own. 64 KiB takes ~0.1 ms at
// 1 GB/s, about what one more request costs; a K3 expert matrix is megabytes, so no expert is read for a
// neighbour's sake.
constexpr uint64_t kCoalesceGapBytes = uint64_t{64} << 10;

// The bytes of `shard` a rank of an expert-parallel group reads: its header first (read here into
// `dst`, which spans the whole shard), then every tensor except the routed experts of other ranks,
// coalesced. The other ranks' experts stay unread zero pages of `dst` that nothing touches: ShardWeights
// drops those experts (shard.h).
Result<std::vector<ByteRange>> ExpertParallelRanges(storage::ObjectStore& store, const std::string& shard,
                                                    std::span<uint8_t> dst, Range mine) {
  const std::string what = store.Describe(shard);
  auto prefix = weights::ReadShardPrefix(store, shard, dst.size());
  if (!prefix.ok()) return Named(prefix.status(), store, shard);
  std::copy(prefix->begin(), prefix->end(), dst.begin());
  K3_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsFile> file,
                      io::SafetensorsFile::Parse(dst.data(), dst.size(), what));
  std::vector<ByteRange> wanted;
  for (const auto& [name, view] : file->tensors()) {
    const int64_t expert = RoutedExpertOfTensor(name);
    if (expert >= 0 && (expert < mine.begin || expert >= mine.end)) continue;
    if (view.nbytes == 0) continue;
    wanted.push_back({static_cast<uint64_t>(view.data - dst.data()), view.nbytes});
  }
  std::sort(wanted.begin(), wanted.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> ranges;
  for (const ByteRange& r : wanted) {
    if (!ranges.empty() && r.begin <= ranges.back().begin + ranges.back().size + kCoalesceGapBytes) {
      const uint64_t end = std::max(ranges.back().begin + ranges.back().size, r.begin + r.size);
      ranges.back().size = end - ranges.back().begin;
    } else {
      ranges.push_back(r);
    }
  }
  return ranges;
}

// Hands back the pages of `buffers` that no view of the model covers: tensors it converted or copied
// (conv taps, column slices of a tensor-parallel rank), the rows of other ranks, tensors it does not use.
// Each shard's length field and JSON header stay (the checkpoint's names point into them). Returns the
// bytes released.
uint64_t ReleaseUnviewed(std::vector<HugePageBuffer>& buffers, std::vector<std::span<const uint8_t>> viewed) {
  std::sort(viewed.begin(), viewed.end(),
            [](std::span<const uint8_t> a, std::span<const uint8_t> b) { return a.data() < b.data(); });
  uint64_t released = 0;
  for (HugePageBuffer& buffer : buffers) {
    const uint8_t* begin = buffer.data();
    const uint8_t* end = begin + buffer.size();
    // The checkpoint over these bytes parsed every header already, so the length is valid here.
    auto header = io::SafetensorsFile::HeaderLength(begin, buffer.size(), buffer.size(), "shard");
    if (!header.ok()) continue;
    size_t kept_to = static_cast<size_t>(8 + *header);
    auto it = std::lower_bound(viewed.begin(), viewed.end(), begin,
                               [](std::span<const uint8_t> s, const uint8_t* p) { return s.data() < p; });
    for (; it != viewed.end() && it->data() < end; ++it) {
      const size_t from = static_cast<size_t>(it->data() - begin);
      if (from > kept_to) released += buffer.ReleasePages(kept_to, from - kept_to);
      kept_to = std::max(kept_to, std::min(buffer.size(), from + it->size()));
    }
    if (kept_to < buffer.size()) released += buffer.ReleasePages(kept_to, buffer.size() - kept_to);
  }
  return released;
}

}  // namespace

Result<RemoteModel> LoadModelFromStore(storage::ObjectStore& store, ThreadPool* pool,
                                       const Parallelism& parallelism, const RemoteLoadOptions& options) {
  std::string location = store.Describe();  // messages add "/NAME"
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  K3_ASSIGN_OR_RETURN(std::string config_text, ReadSmall(store, "config.json"));
  K3_ASSIGN_OR_RETURN(io::ModelConfig cfg, io::ParseModelConfig(config_text, store.Describe("config.json")));
  RemoteModel out;
  K3_ASSIGN_OR_RETURN(out.files.tokenizer_model, ReadSmall(store, "tiktoken.model"));
  K3_ASSIGN_OR_RETURN(out.files.tokenizer_config, ReadSmall(store, "tokenizer_config.json"));
  auto generation = store.ReadAll("generation_config.json");
  if (generation.ok()) {
    out.files.generation_config = std::move(generation).value();
  } else if (generation.status().code() != StatusCode::kNotFound) {
    return Named(generation.status(), store, "generation_config.json");
  }

  std::optional<weights::WeightsManifest> manifest;
  auto manifest_text = store.ReadAll(weights::kManifestName);
  if (manifest_text.ok()) {
    K3_ASSIGN_OR_RETURN(manifest,
                        weights::ParseManifest(*manifest_text, store.Describe(weights::kManifestName)));
  } else if (manifest_text.status().code() != StatusCode::kNotFound) {
    return Named(manifest_text.status(), store, weights::kManifestName);
  }

  std::map<std::string, std::string> text_files;  // the index, when present
  auto index_text = store.ReadAll(io::kCheckpointIndexName);
  const bool has_index = index_text.ok();
  if (has_index) {
    text_files[io::kCheckpointIndexName] = *index_text;
  } else if (index_text.status().code() != StatusCode::kNotFound) {
    return Named(index_text.status(), store, io::kCheckpointIndexName);
  }
  const std::set<std::string> shards = ShardNames(has_index, has_index ? *index_text : std::string());

  auto storage_box = std::make_shared<RemoteStorage>();
  std::vector<storage::RangeRead> ranges;
  std::map<std::string, std::span<const uint8_t>> files;
  uint64_t total = 0, checkpoint_bytes = 0;
  // An expert-parallel rank reads only its own routed experts (and everything else whole).
  const ShardSpec& spec = parallelism.shard;
  const bool own_experts_only = spec.sharded() && spec.expert_parallel;
  const Range mine = own_experts_only ? SplitRange(cfg.num_experts, 1, spec.rank, spec.world) : Range{};
  for (const std::string& shard : shards) {
    auto info = store.Stat(shard);
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound) {
        return NotFound("{}: does not exist{}; fix: upload the missing shard (or point at a complete copy)",
                        store.Describe(shard),
                        has_index ? fmt::format(" ({} names it)", io::kCheckpointIndexName) : std::string());
      }
      return Named(info.status(), store, shard);
    }
    if (manifest) {
      const weights::ManifestEntry* entry = manifest->Find(shard);
      if (entry != nullptr && entry->size != info->size) {
        return DataLoss("{}: is {} bytes, but {} says {}; fix: re-run `k3 weights sync` to this prefix",
                        store.Describe(shard), info->size, weights::kManifestName, entry->size);
      }
    }
    storage_box->buffers.emplace_back(info->size);
    std::span<uint8_t> dst(storage_box->buffers.back().data(), info->size);
    files[shard] = dst;
    checkpoint_bytes += info->size;
    if (!own_experts_only) {
      ranges.push_back({shard, 0, dst});
      total += info->size;
      continue;
    }
    K3_ASSIGN_OR_RETURN(std::vector<ByteRange> needed, ExpertParallelRanges(store, shard, dst, mine));
    for (const ByteRange& r : needed) {
      ranges.push_back({shard, r.begin, dst.subspan(r.begin, r.size)});
      total += r.size;
    }
  }
  for (const auto& [name, text] : text_files) {
    files[name] = std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  }

  spdlog::info("loading weights from {}: {} shard(s), {}, {} requests in flight (at most {} in flight)",
               location, shards.size(), MiB(total), options.concurrency, MiB(options.max_inflight_bytes));
  if (own_experts_only) {
    spdlog::info(
        "rank {} of {} (expert parallel) reads {} of the checkpoint's {}: routed experts [{}, {}) of {} "
        "and every other tensor",
        spec.rank, spec.world, MiB(total), MiB(checkpoint_bytes), mine.begin, mine.end, cfg.num_experts);
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (options.progress != nullptr) {
    options.progress->SetTotalBytes(total);
    options.progress->SetPhase(fmt::format("reading weights from {}", location));
  }
  CountingStore counting(store, options.progress);
  {
    ProgressLogger progress(counting, total, options.progress_interval);
    storage::ParallelReadOptions read;
    read.concurrency = options.concurrency;
    read.chunk_bytes = options.chunk_bytes;
    read.max_inflight_bytes = options.max_inflight_bytes;
    K3_RETURN_IF_ERROR(storage::ReadRangesParallel(counting, ranges, read));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double bytes_per_s = s > 0 ? static_cast<double>(total) / s : static_cast<double>(total);
  // The measured rate in the unit `k3 plan --weights-bandwidth` takes, for the probe budgets it renders.
  spdlog::info("read {} from {} in {:.2f} s ({}/s; k3 plan --weights-bandwidth {:.0f}MB/s)", MiB(total),
               location, s, MiB(static_cast<uint64_t>(bytes_per_s)), std::max(1.0, bytes_per_s / 1e6));

  if (options.progress != nullptr) options.progress->SetPhase("checking the checkpoint and binding tensors");
  K3_ASSIGN_OR_RETURN(storage_box->checkpoint, io::Checkpoint::FromMemory(location, files));
  const io::Checkpoint* checkpoint = storage_box->checkpoint.get();
  auto lookup = [checkpoint](const std::string& name) { return checkpoint->Find(name); };
  auto model = Model::FromTensors(cfg, lookup, storage_box, pool, parallelism);
  if (!model.ok()) return model.status().WithPrefix(location);
  out.model = std::move(model).value();
  const uint64_t released = ReleaseUnviewed(storage_box->buffers, out.model->ViewedStorage());
  spdlog::info(
      "weights in memory: at most {} of the checkpoint's {} ({} handed back: not viewed by this "
      "rank's tensors)",
      MiB(checkpoint_bytes - std::min(checkpoint_bytes, released)), MiB(checkpoint_bytes), MiB(released));
  return out;
}

Result<RemoteGroupMember> JoinGroupAndLoadFromStore(storage::ObjectStore& store, ThreadPool* pool,
                                                    const dist::GroupPlan& plan, const std::string& version,
                                                    std::function<void(const Status&)> on_failure,
                                                    const RemoteLoadOptions& options) {
  K3_ASSIGN_OR_RETURN(const std::string config_text, ReadSmall(store, "config.json"));
  K3_ASSIGN_OR_RETURN(const io::ModelConfig cfg,
                      io::ParseModelConfig(config_text, store.Describe("config.json")));
  std::string fingerprint;
  if (plan.world > 1) {
    K3_ASSIGN_OR_RETURN(std::vector<storage::ObjectInfo> objects, store.List(""));
    std::vector<std::pair<std::string, uint64_t>> shards;
    for (const storage::ObjectInfo& o : objects) {
      if (o.key.ends_with(".safetensors") && o.key.find('/') == std::string::npos)
        shards.emplace_back(o.key, o.size);
    }
    fingerprint = dist::CheckpointFingerprint(version, config_text, std::move(shards));
  }
  RemoteGroupMember out;
  K3_ASSIGN_OR_RETURN(
      out.member, JoinGroupAndLoadWith(cfg, plan, fingerprint, std::move(on_failure),
                                       [&](const Parallelism& parallelism) -> Result<std::unique_ptr<Model>> {
                                         K3_ASSIGN_OR_RETURN(
                                             RemoteModel remote,
                                             LoadModelFromStore(store, pool, parallelism, options));
                                         out.files = std::move(remote.files);
                                         return std::move(remote.model);
                                       }));
  return out;
}

}  // namespace k3::model
