// ScratchArena: bump allocation over blocks kept from step to step (scratch_arena.h).
#include "src/kernels/scratch_arena.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace k3::kernels {
namespace {
constexpr size_t kMinBlockBytes = size_t{1} << 20;
}  // namespace

void ScratchArena::FreeAligned::operator()(std::byte* p) const { std::free(p); }

ScratchArena::Block ScratchArena::NewBlock(size_t size) {
  size = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) throw std::bad_alloc();
  return Block{std::unique_ptr<std::byte, FreeAligned>(static_cast<std::byte*>(p)), size};
}

void* ScratchArena::TakeBytes(size_t bytes) {
  bytes = std::max<size_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  if (block_ < blocks_.size() && offset_ + bytes <= blocks_[block_].size) {
    void* p = blocks_[block_].data.get() + offset_;
    offset_ += bytes;
    return p;
  }
  // The next block with room (the ones skipped stay unused until the arena is rewound before them).
  size_t next = blocks_.empty() ? 0 : block_ + 1;
  while (next < blocks_.size() && blocks_[next].size < bytes) ++next;
  if (next >= blocks_.size()) {
    blocks_.push_back(NewBlock(std::max({bytes, capacity(), kMinBlockBytes})));
    next = blocks_.size() - 1;
  }
  block_ = next;
  offset_ = bytes;
  return blocks_[block_].data.get();
}

void ScratchArena::Reset() {
  block_ = 0;
  offset_ = 0;
  if (blocks_.size() <= 1) return;
  const size_t total = capacity();
  blocks_.clear();
  blocks_.push_back(NewBlock(total));
}

size_t ScratchArena::capacity() const {
  size_t total = 0;
  for (const Block& b : blocks_) total += b.size;
  return total;
}

}  // namespace k3::kernels
