// HugePageBuffer: an over-sized anonymous mapping whose 2 MiB-aligned interior is handed out.
#include "src/base/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

namespace k3 {

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  mapping_bytes_ = bytes + kHugePageBytes;
  void* p = ::mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    mapping_ = nullptr;
    data_ = static_cast<uint8_t*>(::operator new (bytes, std::align_val_t{64}));
    std::memset(data_, 0, bytes);
    return;
  }
  mapping_ = p;
  data_ = reinterpret_cast<uint8_t*>(HugePageAlign(reinterpret_cast<uintptr_t>(p)));
#ifdef MADV_HUGEPAGE
  ::madvise(data_, bytes, MADV_HUGEPAGE);  // advice only: ignored where THP is off
#endif
}

void HugePageBuffer::Release() {
  if (mapping_ != nullptr) {
    ::munmap(mapping_, mapping_bytes_);
  } else if (data_ != nullptr) {
    ::operator delete (data_, std::align_val_t{64});
  }
  data_ = nullptr;
  mapping_ = nullptr;
  size_ = mapping_bytes_ = 0;
}

size_t HugePageBuffer::ReleasePages(size_t offset, size_t length) {
  constexpr size_t kPage = 4096;
  if (mapping_ == nullptr || offset >= size_) return 0;
  const size_t end = std::min(size_, offset + std::min(length, size_ - offset));
  // data_ is 2 MiB-aligned, so offsets rounded to 4 KiB are page addresses.
  const size_t first = (offset + kPage - 1) / kPage * kPage;
  const size_t last = end / kPage * kPage;
  if (last <= first) return 0;
  if (::madvise(data_ + first, last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

HugePageBuffer::~HugePageBuffer() { Release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
  }
  return *this;
}

}  // namespace k3
