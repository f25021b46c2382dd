// ScratchArena: the working memory of a forward step's kernels, handed out by a bump pointer.
//
// Take<T>(n) returns n uninitialised T (64-byte aligned) that stay valid until the arena is rewound past
// them: a Frame rewinds to where it was opened when it closes (a layer's buffers live for the layer),
// Reset rewinds everything (the start of a step). Memory is kept for the next step: after the first steps
// at a given batch size a step allocates nothing. When a step needs more than one block, Reset joins the
// blocks into one of their total size, so the arena settles at one block of the largest step's peak.
// One thread takes from it at a time (the caller of a parallel loop takes each worker's share before
// the loop: base + worker * per_worker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace k3::kernels {

class ScratchArena {
 public:
  ScratchArena() = default;
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;
  ScratchArena(ScratchArena&&) = default;
  ScratchArena& operator=(ScratchArena&&) = default;

  // n values of T, default-initialised (no zeroing for arithmetic types).
  template <typename T>
  T* Take(size_t n) {
    static_assert(std::is_trivially_destructible_v<T>, "arena memory is never destroyed");
    static_assert(alignof(T) <= kAlignment);
    T* p = static_cast<T*>(TakeBytes(n * sizeof(T)));
    std::uninitialized_default_construct_n(p, n);
    return p;
  }

  // Where the next Take starts; Rewind(mark) releases everything taken after it.
  struct Mark {
    size_t block = 0, offset = 0;
  };
  Mark mark() const { return {block_, offset_}; }
  void Rewind(Mark mark) {
    block_ = mark.block;
    offset_ = mark.offset;
  }
  // Releases everything; joins the blocks into one when there are several.
  void Reset();

  // Rewinds to where it was opened when it goes out of scope.
  class Frame {
   public:
    explicit Frame(ScratchArena& arena) : arena_(arena), mark_(arena.mark()) {}
    ~Frame() { arena_.Rewind(mark_); }
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;

   private:
    ScratchArena& arena_;
    Mark mark_;
  };

  // Bytes held (every block), for tests and logs.
  size_t capacity() const;

 private:
  static constexpr size_t kAlignment = 64;
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };
  struct Block {
    std::unique_ptr<std::byte, FreeAligned> data;
    size_t size = 0;
  };
  void* TakeBytes(size_t bytes);
  static Block NewBlock(size_t size);

  std::vector<Block> blocks_;
  size_t block_ = 0;   // the block Takes come from
  size_t offset_ = 0;  // bytes of it in use
};

}  // namespace k3::kernels
