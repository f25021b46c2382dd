// Thread-local scratch buffers (scratch.h).
#include "src/kernels/scratch.h"

#include "hwy/aligned_allocator.h"

namespace k3::kernels {
namespace {
struct ScratchBuffer {
  hwy::AlignedFreeUniquePtr<float[]> data;
  size_t capacity = 0;
};
}  // namespace

float* ThreadScratch(ScratchSlot slot, size_t num_floats) {
  thread_local ScratchBuffer buffers[static_cast<size_t>(ScratchSlot::kSentinel)];
  ScratchBuffer& buffer = buffers[static_cast<size_t>(slot)];
  if (buffer.capacity < num_floats || buffer.data == nullptr) {
    size_t capacity = num_floats < 64 ? 64 : num_floats;
    buffer.data = hwy::AllocateAligned<float>(capacity);
    buffer.capacity = capacity;
  }
  return buffer.data.get();
}

}  // namespace k3::kernels
