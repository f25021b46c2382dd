// All-reduce among the ranks of one machine through a POSIX shared-memory segment: the CPU counterpart of
// NCCL's intra-node path (vLLM's CPU backend does the same). Over TCP every small all-reduce of a decode
// step paid two kernel round trips and a wake-up of Gloo's event-loop thread; here a rank copies its
// vector into its slot, publishes a sequence number, waits (spinning, then yielding) for every other
// rank's, and sums the slots itself in rank order, so every rank computes bit-identical results.
//
//   segment: Header | slots[2][world][kSlotFloats]   (two slot sets: generation g writes set g % 2, and
//            a rank starts generation g only after every rank published g - 1, i.e. finished reading
//            generation g - 2 from the same set; so one wait per chunk)
//
// A lost peer is noticed while waiting (its pid no longer exists) and reported as a Status naming it;
// a timeout likewise. The creator unlinks the name once every rank has mapped it, so a crash leaves no
// segment behind.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "src/base/status.h"

namespace k3::dist {

class ShmAllReduce {
 public:
  // Floats per rank per chunk (1 MiB; a segment is 2 x world MiB); larger vectors go in chunks.
  static constexpr size_t kSlotFloats = size_t{1} << 18;
  static constexpr int kMaxRanks = 64;

  // Rank 0 creates the segment `name` ("/k3-..."), the others open it. Call Attached() on every rank,
  // then Unlink() on rank 0 once all have (the creator's name is removed; the mappings stay).
  static Result<std::unique_ptr<ShmAllReduce>> Create(const std::string& name, int world);
  static Result<std::unique_ptr<ShmAllReduce>> Open(const std::string& name, int rank, int world);
  ~ShmAllReduce();
  ShmAllReduce(const ShmAllReduce&) = delete;
  ShmAllReduce& operator=(const ShmAllReduce&) = delete;

  // Records this process as `rank` (its pid, for lost-peer detection).
  void Attach(int rank);
  void Unlink();

  // data[i] = sum over ranks of data[i], summed in rank order on every rank. Waits at most `timeout` for
  // the other ranks per chunk.
  Status AllReduceSum(std::span<float> data, std::chrono::milliseconds timeout);

  struct Header;  // in the segment: per rank, its pid and the last generation it published

 private:
  ShmAllReduce(std::string name, int world, void* base, size_t bytes, bool owner);
  float* Slot(uint64_t generation, int rank) const;
  Status WaitForAll(uint64_t generation, std::chrono::milliseconds timeout);

  std::string name_;
  int world_;
  int rank_ = -1;
  void* base_;
  size_t bytes_;
  bool owner_;
  bool unlinked_ = false;
  uint64_t generation_ = 0;
};

}  // namespace k3::dist
