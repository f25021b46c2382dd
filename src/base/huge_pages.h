// Memory on 2 MiB pages where the kernel allows it (transparent huge pages).
//
// On a VM with shadow page tables the first touch of a 4 KiB page costs about 1 us and every TLB miss
// walks two page tables, so buffers that are streamed (benchmark weights, the bandwidth probe) live on
// 2 MiB-aligned memory advised MADV_HUGEPAGE. Model weights get the same treatment through
// MappedFile (file.cc), which uses HugePageAlign for its mapping address.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3 {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// The first 2 MiB boundary at or after `address`.
inline uintptr_t HugePageAlign(uintptr_t address) {
  return (address + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
}

// `bytes` of zeroed, writable anonymous memory starting on a 2 MiB boundary, advised MADV_HUGEPAGE.
// Falls back to an ordinary heap block (still zeroed) when mmap fails. Move-only.
class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  explicit HugePageBuffer(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  // Hands the whole 4 KiB pages inside [offset, offset + length) back to the system; they read as zeros
  // afterwards. Returns the bytes released (0 for the heap fallback, which keeps its pages).
  size_t ReleasePages(size_t offset, size_t length);
  size_t size() const { return size_; }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }

 private:
  void Release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // what munmap releases (nullptr: heap fallback, data_ from operator new)
  size_t mapping_bytes_ = 0;
};

}  // namespace k3
