// bench/weights: how close loading a checkpoint comes to the rate of just moving its bytes (issue 16).
//
//   1. Streaming load from object storage: `k3 serve s3://...`'s loader (model::LoadModelFromStore: list,
//      parallel ranged GETs into memory, header and size checks, Model::FromTensors) from an s3rver on
//      loopback, against raw HTTP GETs of the same bytes from the same server in the same run: plain
//      libcurl, the same chunk size and number of connections, SigV4-signed the same way, into fresh
//      memory, no checks. Target: the load at >= 80 % of the raw GET rate.
//   2. Local files: the same loader over the checkpoint directory (FileStore: every byte read into
//      memory, then checked) against reading the same files from a warm page cache into fresh memory
//      (the bytes kept, as a loader must). Target: <= 1.1x the read time. The copy alone (one reused
//      buffer) is printed too. `Model::Load(dir)` (the mmap path of `k3 serve DIR`, which reads pages on
//      first use) is printed beside it.
// The two sides of each pair alternate, repeats times; figures are medians, with every sample printed.
//
//   weights_bench --model DIR [--repeats 5] [--concurrency 8] [--chunk-mib 8] [--threads N]
// DIR holds a checkpoint with its tokenizer files (`k3 gen-model --preset mini-k3 --out DIR`). Needs
// node and `npm ci --prefix tests/storage` for s3rver; says so and exits 2 without them.
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/machine_limits.h"
#include "src/base/curl_transport.h"
#include "src/base/huge_pages.h"
#include "src/base/thread_pool.h"
#include "src/model/model.h"
#include "src/model/remote_checkpoint.h"
#include "src/storage/file_store.h"
#include "src/storage/object_uri.h"
#include "src/storage/s3_store.h"
#include "src/storage/testing/s3rver_process.h"
#include "src/weights/sync.h"

namespace {

using k3::bench::LoadAverage;
using k3::bench::Median;
using SteadyClock = std::chrono::steady_clock;

constexpr char kBucket[] = "bench";
constexpr char kPrefix[] = "ckpt";

double Since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

std::string Samples(const std::vector<double>& seconds) {
  std::string out;
  for (double s : seconds) out += (out.empty() ? "" : " ") + std::to_string(s).substr(0, 5);
  return out;
}

// One ranged GET's destination: bytes land at `next`, at most `end`.
struct Sink {
  uint8_t* next;
  uint8_t* end;
};

size_t WriteToSink(char* data, size_t size, size_t count, void* user) {
  Sink* sink = static_cast<Sink*>(user);
  const size_t bytes = size * count;
  if (bytes > static_cast<size_t>(sink->end - sink->next)) return 0;  // longer than asked: fail
  std::memcpy(sink->next, data, bytes);
  sink->next += bytes;
  return bytes;
}

struct Chunk {
  std::string url;
  uint64_t begin;  // byte offset inside the object
  uint64_t size;
  uint8_t* dst;
};

// Raw HTTP GETs of every object of `objects` (key, size) under base_url: `connections` threads, each
// with one reused libcurl handle, take chunk_bytes-sized ranges in order; SigV4-signed with s3rver's
// account as libcurl signs (CURLOPT_AWS_SIGV4). Returns the seconds, or a negative value on failure.
double RawGetSeconds(const std::string& base_url, const std::vector<k3::storage::ObjectInfo>& objects,
                     int connections, uint64_t chunk_bytes) {
  const auto start = SteadyClock::now();
  std::vector<k3::HugePageBuffer> memory;  // fresh memory per object, as the loader's
  std::vector<Chunk> chunks;
  for (const auto& o : objects) {
    memory.emplace_back(o.size);
    for (uint64_t begin = 0; begin < o.size; begin += chunk_bytes) {
      chunks.push_back({base_url + "/" + o.key, begin, std::min(chunk_bytes, o.size - begin),
                        memory.back().data() + begin});
    }
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const k3::storage::AwsCredentials account = k3::storage::testing::S3rverProcess::Credentials();
  const std::string user_password = account.access_key_id + ":" + account.secret_access_key;
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&] {
      CURL* curl = curl_easy_init();
      curl_slist* headers = curl_slist_append(
          nullptr, "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
      curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
      curl_easy_setopt(curl, CURLOPT_USERPWD, user_password.c_str());
      curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteToSink);
      for (size_t i = next++; i < chunks.size() && !failed; i = next++) {
        const Chunk& c = chunks[i];
        Sink sink{c.dst, c.dst + c.size};
        const std::string range = std::to_string(c.begin) + "-" + std::to_string(c.begin + c.size - 1);
        curl_easy_setopt(curl, CURLOPT_URL, c.url.c_str());
        curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
        long status = 0;
        if (curl_easy_perform(curl) != CURLE_OK ||
            curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 206 ||
            sink.next != sink.end) {
          std::fprintf(stderr, "weights_bench: raw GET %s bytes %s failed (HTTP %ld)\n", c.url.c_str(),
                       range.c_str(), status);
          failed = true;
        }
      }
      curl_slist_free_all(headers);
      curl_easy_cleanup(curl);
    });
  }
  for (std::thread& t : threads) t.join();
  return failed ? -1 : Since(start);
}

// Seconds to read every file below dir (recursively) from the page cache: into one reused 8 MiB buffer
// (the copy alone), or (keep) each file whole into fresh memory on 2 MiB pages, as any loader that holds
// the bytes must.
double WarmReadSeconds(const std::string& dir, bool keep) {
  std::vector<char> buffer(8 << 20);
  const auto start = SteadyClock::now();
  std::vector<k3::HugePageBuffer> kept;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    if (keep) {
      kept.emplace_back(entry.file_size());
      in.read(reinterpret_cast<char*>(kept.back().data()), static_cast<std::streamsize>(entry.file_size()));
      continue;
    }
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    }
  }
  return Since(start);
}

// Seconds of LoadModelFromStore over `store`, or a negative value (with the error printed).
double StoreLoadSeconds(k3::storage::ObjectStore& store, k3::ThreadPool* pool,
                        const k3::model::RemoteLoadOptions& options) {
  const auto start = SteadyClock::now();
  auto loaded = k3::model::LoadModelFromStore(store, pool, {}, options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "weights_bench: %s\n", loaded.status().ToString().c_str());
    return -1;
  }
  const double seconds = Since(start);
  loaded->model.reset();  // the next sample starts from the same free memory
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int repeats = 5, concurrency = 8;
  uint64_t chunk_mib = 8;
  size_t threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model")
      dir = argv[i + 1];
    else if (flag == "--repeats")
      repeats = std::atoi(argv[i + 1]);
    else if (flag == "--concurrency")
      concurrency = std::atoi(argv[i + 1]);
    else if (flag == "--chunk-mib")
      chunk_mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--threads")
      threads = std::strtoul(argv[i + 1], nullptr, 10);
  }
  if (dir.empty() || repeats < 1 || concurrency < 1 || chunk_mib < 1) {
    std::fprintf(stderr,
                 "usage: weights_bench --model DIR [--repeats 5] [--concurrency 8] [--chunk-mib 8] "
                 "[--threads N]\n");
    return 2;
  }
  if (std::string why = k3::storage::testing::S3rverProcess::Unavailable(); !why.empty()) {
    std::fprintf(stderr, "weights_bench: s3rver cannot run here: %s\n", why.c_str());
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  k3::EnsureCurlInitialized();
  k3::ThreadPool pool(threads);

  auto server = k3::storage::testing::S3rverProcess::Start({kBucket});
  if (!server.ok()) {
    std::fprintf(stderr, "weights_bench: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto uri = k3::storage::ParseObjectUri(std::string("s3://") + kBucket + "/" + kPrefix);
  k3::storage::S3Options s3;
  s3.endpoint = (*server)->endpoint();
  s3.credentials = k3::storage::testing::S3rverProcess::Credentials();
  auto bucket = k3::storage::S3Store::Create(*uri, s3);
  if (!bucket.ok()) {
    std::fprintf(stderr, "weights_bench: %s\n", bucket.status().ToString().c_str());
    return 1;
  }
  k3::storage::FileStore local(dir);
  k3::weights::SyncOptions sync;
  sync.source_description = dir;
  auto synced = k3::weights::SyncWeights(local, **bucket, sync);
  if (!synced.ok()) {
    std::fprintf(stderr, "weights_bench: upload to s3rver: %s\n", synced.status().ToString().c_str());
    return 1;
  }
  auto objects = (*bucket)->List("");
  if (!objects.ok()) {
    std::fprintf(stderr, "weights_bench: %s\n", objects.status().ToString().c_str());
    return 1;
  }
  uint64_t bytes = 0;
  for (const auto& o : *objects) bytes += o.size;

  k3::model::RemoteLoadOptions load;
  load.concurrency = concurrency;
  load.chunk_bytes = chunk_mib << 20;
  load.max_inflight_bytes = std::max<uint64_t>(load.max_inflight_bytes, load.chunk_bytes * concurrency);
  load.progress_interval = std::chrono::hours(1);
  std::printf(
      "load average before: %s; %zu objects, %.3f GB; %d connections x %llu MiB ranges; %zu threads; "
      "medians of %d runs, alternating\n",
      LoadAverage().c_str(), objects->size(), bytes / 1e9, concurrency,
      static_cast<unsigned long long>(chunk_mib), pool.num_threads(), repeats);

  // 1. Streaming load from s3rver vs raw GETs of the same bytes.
  const std::string base_url = (*server)->endpoint() + "/" + kBucket + "/" + kPrefix;
  if (RawGetSeconds(base_url, *objects, concurrency, load.chunk_bytes) < 0) return 1;  // warm-up
  std::vector<double> raw_s, stream_s;
  for (int r = 0; r < repeats; ++r) {
    raw_s.push_back(RawGetSeconds(base_url, *objects, concurrency, load.chunk_bytes));
    stream_s.push_back(StoreLoadSeconds(**bucket, &pool, load));
    if (raw_s.back() < 0 || stream_s.back() < 0) return 1;
  }
  const double raw_rate = bytes / Median(raw_s) / 1e9, stream_rate = bytes / Median(stream_s) / 1e9;
  std::printf("s3rver raw GET:        %.3f s median [%s], %.3f GB/s\n", Median(raw_s), Samples(raw_s).c_str(),
              raw_rate);
  std::printf(
      "streaming load (s3://): %.3f s median [%s], %.3f GB/s = %.0f%% of the raw GET rate (target >= 80%%)\n",
      Median(stream_s), Samples(stream_s).c_str(), stream_rate, 100 * stream_rate / raw_rate);

  // 2. Local files: the same loader over the directory vs reading the files (page cache warm).
  WarmReadSeconds(dir, false);
  std::vector<double> copy_s, read_s, file_s, mmap_s;
  for (int r = 0; r < repeats; ++r) {
    copy_s.push_back(WarmReadSeconds(dir, false));
    read_s.push_back(WarmReadSeconds(dir, true));
    file_s.push_back(StoreLoadSeconds(local, &pool, load));
    if (file_s.back() < 0) return 1;
    const auto start = SteadyClock::now();
    auto mapped = k3::model::Model::Load(dir, &pool);
    if (!mapped.ok()) {
      std::fprintf(stderr, "weights_bench: %s\n", mapped.status().ToString().c_str());
      return 1;
    }
    mmap_s.push_back(Since(start));
  }
  std::printf("read the files (warm) through one 8 MiB buffer: %.3f s median [%s]\n", Median(copy_s),
              Samples(copy_s).c_str());
  std::printf("read the files (warm) into memory kept:   %.3f s median [%s]\n", Median(read_s),
              Samples(read_s).c_str());
  std::printf("local load (FileStore): %.3f s median [%s] = %.2fx the read (target <= 1.1x)\n",
              Median(file_s), Samples(file_s).c_str(), Median(file_s) / Median(read_s));
  std::printf("                        = %.2fx the copy alone (%d connections against one reader)\n",
              Median(file_s) / Median(copy_s), concurrency);
  std::printf("Model::Load (mmap):     %.3f s median [%s] (pages are read on first use)\n", Median(mmap_s),
              Samples(mmap_s).c_str());
  std::printf("load average after: %s\n", LoadAverage().c_str());
  return 0;
}
