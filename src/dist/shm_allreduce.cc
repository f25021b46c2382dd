// Shared-memory all-reduce among the ranks of one machine (see shm_allreduce.h).
#include "src/dist/shm_allreduce.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include <fmt/format.h>

namespace k3::dist {

namespace {
constexpr uint64_t kMagic = 0x6b3373686d617231ULL;  // "k3shmar1"
constexpr size_t kLine = 64;                        // one sequence counter per cache line
}  // namespace

struct ShmAllReduce::Header {
  uint64_t magic;
  int32_t world;
  struct alignas(kLine) Rank {
    std::atomic<uint64_t> published;  // the last generation whose chunk this rank wrote to its slot
    std::atomic<int32_t> pid;         // 0 until the rank attached
  };
  Rank ranks[kMaxRanks];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the shared counters must be lock-free to work across processes");

namespace {

size_t HeaderBytes() { return (sizeof(ShmAllReduce::Header) + kLine - 1) / kLine * kLine; }

// True once process `pid` has exited: gone (ESRCH), or a zombie its parent has not reaped yet (local
// ranks are children of node 0's rank 0, which reaps them only when it waits for them).
bool ProcessGone(int32_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

size_t SegmentBytes(int world) {
  return HeaderBytes() + 2 * static_cast<size_t>(world) * ShmAllReduce::kSlotFloats * sizeof(float);
}

}  // namespace

ShmAllReduce::ShmAllReduce(std::string name, int world, void* base, size_t bytes, bool owner)
    : name_(std::move(name)), world_(world), base_(base), bytes_(bytes), owner_(owner) {}

ShmAllReduce::~ShmAllReduce() {
  if (owner_) Unlink();
  munmap(base_, bytes_);
}

Result<std::unique_ptr<ShmAllReduce>> ShmAllReduce::Create(const std::string& name, int world) {
  if (world < 1 || world > kMaxRanks) return InvalidArgument("shared-memory all-reduce: {} ranks", world);
  const size_t bytes = SegmentBytes(world);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return IoError("shm_open {}: {}", name, std::strerror(errno));
  // Reserve the pages now: with a /dev/shm too small for the segment, a later write would be SIGBUS.
  if (const int rv = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rv != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return IoError("reserving {} bytes for {} in /dev/shm: {} (is /dev/shm large enough?)", bytes, name,
                   std::strerror(rv));
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name.c_str());
    return IoError("mmap {}: {}", name, std::strerror(err));
  }
  auto* header = new (base) Header();
  header->magic = kMagic;
  header->world = world;
  for (auto& r : header->ranks) {
    r.published.store(0, std::memory_order_relaxed);
    r.pid.store(0, std::memory_order_relaxed);
  }
  return std::unique_ptr<ShmAllReduce>(new ShmAllReduce(name, world, base, bytes, /*owner=*/true));
}

Result<std::unique_ptr<ShmAllReduce>> ShmAllReduce::Open(const std::string& name, int rank, int world) {
  if (world < 1 || world > kMaxRanks || rank < 0 || rank >= world)
    return InvalidArgument("shared-memory all-reduce: rank {} of {}", rank, world);
  const size_t bytes = SegmentBytes(world);
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return IoError("shm_open {}: {}", name, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return IoError("{}: {} bytes, expected {} for {} ranks", name, st.st_size, bytes, world);
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (base == MAP_FAILED) return IoError("mmap {}: {}", name, std::strerror(err));
  const auto* header = static_cast<const Header*>(base);
  if (header->magic != kMagic || header->world != world) {
    munmap(base, bytes);
    return IoError("{}: not a k3 all-reduce segment for {} ranks", name, world);
  }
  return std::unique_ptr<ShmAllReduce>(new ShmAllReduce(name, world, base, bytes, /*owner=*/false));
}

void ShmAllReduce::Attach(int rank) {
  rank_ = rank;
  static_cast<Header*>(base_)->ranks[rank].pid.store(static_cast<int32_t>(getpid()),
                                                     std::memory_order_release);
}

void ShmAllReduce::Unlink() {
  if (owner_ && !unlinked_) {
    shm_unlink(name_.c_str());
    unlinked_ = true;
  }
}

float* ShmAllReduce::Slot(uint64_t generation, int rank) const {
  auto* slots = reinterpret_cast<float*>(static_cast<char*>(base_) + HeaderBytes());
  const size_t set = generation % 2;
  return slots + (set * static_cast<size_t>(world_) + static_cast<size_t>(rank)) * kSlotFloats;
}

Status ShmAllReduce::WaitForAll(uint64_t generation, std::chrono::milliseconds timeout) {
  auto* header = static_cast<Header*>(base_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int r = 0; r < world_; ++r) {
    auto& peer = header->ranks[r];
    uint32_t spins = 0;
    while (peer.published.load(std::memory_order_acquire) < generation) {
      if (++spins < 4096) continue;  // the peer is usually a few microseconds behind
      sched_yield();                 // then give the CPU away (ranks may share cores)
      if ((spins & 1023) != 0) continue;
      const int32_t pid = peer.pid.load(std::memory_order_acquire);
      if (pid > 0 && ProcessGone(pid)) {
        return IoError("rank {}: all-reduce failed: lost rank {} (its process {} is gone)", rank_, r, pid);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return IoError("rank {}: all-reduce timed out after {} ms waiting for rank {}", rank_,
                       timeout.count(), r);
      }
    }
  }
  return OkStatus();
}

Status ShmAllReduce::AllReduceSum(std::span<float> data, std::chrono::milliseconds timeout) {
  auto* header = static_cast<Header*>(base_);
  for (size_t begin = 0; begin < data.size(); begin += kSlotFloats) {
    const size_t n = std::min(kSlotFloats, data.size() - begin);
    const uint64_t generation = ++generation_;
    std::memcpy(Slot(generation, rank_), data.data() + begin, n * sizeof(float));
    header->ranks[rank_].published.store(generation, std::memory_order_release);
    K3_RETURN_IF_ERROR(WaitForAll(generation, timeout));
    // Every rank sums the same slots in rank order: bit-identical results everywhere.
    float* out = data.data() + begin;
    const float* first = Slot(generation, 0);
    std::memcpy(out, first, n * sizeof(float));
    for (int r = 1; r < world_; ++r) {
      const float* in = Slot(generation, r);
      for (size_t i = 0; i < n; ++i) out[i] += in[i];
    }
  }
  return OkStatus();
}

}  // namespace k3::dist
