// ScratchArena: alignment, buffers that never overlap while alive, frames that hand the same memory to the
// next layer, and a step that outgrows its block settling in one block at the next Reset.
#include "src/kernels/scratch_arena.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace k3::kernels {
namespace {

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(ScratchArenaTest, BuffersAreAlignedAndKeepTheirValues) {
  ScratchArena arena;
  std::vector<float*> buffers;
  for (size_t n : {1, 3, 1000, 70000, 5, 300000}) {  // more than the first block holds
    float* p = arena.Take<float>(n);
    EXPECT_TRUE(Aligned(p)) << n;
    std::iota(p, p + n, static_cast<float>(n));
    buffers.push_back(p);
  }
  size_t i = 0;
  for (size_t n : {1, 3, 1000, 70000, 5, 300000}) {
    const float* p = buffers[i++];
    for (size_t j = 0; j < n; ++j)
      ASSERT_EQ(p[j], static_cast<float>(n + j)) << "buffer of " << n << " at " << j;
  }
}

TEST(ScratchArenaTest, FrameReleasesWhatItTook) {
  ScratchArena arena;
  float* before = arena.Take<float>(10);
  float* first = nullptr;
  {
    ScratchArena::Frame frame(arena);
    first = arena.Take<float>(100);
    EXPECT_NE(first, before);
  }
  {
    ScratchArena::Frame frame(arena);
    EXPECT_EQ(arena.Take<float>(100), first);  // the next layer gets the same memory
  }
  EXPECT_NE(arena.Take<float>(1), before);  // what was taken before the frames stays taken
}

TEST(ScratchArenaTest, ResetJoinsBlocksIntoOne) {
  ScratchArena arena;
  arena.Take<float>(100);
  const size_t one_block = arena.capacity();
  arena.Take<float>(one_block);  // does not fit: a second block
  EXPECT_GT(arena.capacity(), one_block);
  const size_t total = arena.capacity();
  arena.Reset();
  EXPECT_EQ(arena.capacity(), total);
  // The whole of the last step's peak now comes from the one block, without growing.
  float* a = arena.Take<float>(100);
  float* b = arena.Take<float>(one_block);
  EXPECT_EQ(arena.capacity(), total);
  EXPECT_GE(reinterpret_cast<char*>(b), reinterpret_cast<char*>(a + 100));
}

TEST(ScratchArenaTest, TakesStructs) {
  struct Pair {
    int32_t a = 7;
    float b = 1.5f;
  };
  ScratchArena arena;
  Pair* pairs = arena.Take<Pair>(3);
  EXPECT_EQ(pairs[2].a, 7);  // default member initialisers run
  EXPECT_EQ(pairs[2].b, 1.5f);
}

}  // namespace
}  // namespace k3::kernels
