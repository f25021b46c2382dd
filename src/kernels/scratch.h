// Per-thread scratch buffers for kernels that need working memory (the re-laid-out activations of a
// matmul, a decoded weight panel). Each thread owns one buffer per slot; a buffer
// grows to the largest size asked for and is reused afterwards, so a kernel allocates only on its first
// call at a new maximum size. Buffers are 64-byte aligned. Not for data that outlives one kernel call.
#pragma once

#include <cstddef>

namespace k3::kernels {

enum class ScratchSlot {
  kMatMulInput = 0,       // the calling thread's copy of x in the kernel's layout
  kMatMulDecodedWeights,  // each worker's MXFP4 weight panel decoded once for all x rows (M > 4 on the
                          // x86 dot-product path, M >= 8 on arm64's, M >= kPanelMinM on the fp32 path
                          // but for AVX2)
  kSentinel,
};

// Returns this thread's buffer for `slot`, holding at least `num_floats` floats (contents undefined).
float* ThreadScratch(ScratchSlot slot, size_t num_floats);

}  // namespace k3::kernels
