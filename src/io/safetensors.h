// safetensors reading (mmap, zero-copy) and writing.
//
// File layout: u64 little-endian N, then N bytes of JSON header
//   {"name": {"dtype": "BF16", "shape": [r, c], "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
// then the data area; offsets are relative to the data area's start.
//
// The header is untrusted input. Open() rejects, with a message naming the file and the tensor:
// header length past EOF or above kMaxHeaderBytes, invalid JSON, non-object entries, unknown dtype,
// negative or non-integer shapes, shape products that overflow, byte length != product(shape) x dtype
// size, ranges outside the data area, ranges that overlap, duplicate names, a "__metadata__" that is not
// an object of strings. Gaps between tensors are accepted (the Rust reader is stricter). Corruption is
// DataLoss; a dtype safetensors defines but k3stack does not support (F8_*, ...) is Unimplemented.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/base/file.h"
#include "src/base/status.h"
#include "src/io/dtype.h"

namespace k3::io {

inline constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // 100 MiB, as the reference implementation

// A tensor inside a mapped file. `data` stays valid while the owning SafetensorsFile lives.
struct TensorView {
  std::string name;
  DType dtype = DType::kSentinel;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
  // "[3, 4]"
  std::string ShapeString() const;
};

class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // Parses an in-memory image (used by Open and the fuzzer). `bytes` must outlive the result.
  static Result<std::unique_ptr<SafetensorsFile>> Parse(const uint8_t* bytes, size_t size,
                                                        const std::string& name_for_errors);

  // Checks the header of a file that is not in memory (read from object storage): `bytes` holds the first
  // `available` bytes (at least 8 + the header length) of a file of `file_size` bytes. Every check of
  // Parse runs against file_size; TensorView::data is null unless the whole file is given.
  static Result<std::unique_ptr<SafetensorsFile>> ParseHeader(const uint8_t* bytes, size_t available,
                                                              uint64_t file_size,
                                                              const std::string& name_for_errors);
  // The header length the first 8 bytes announce, checked against kMaxHeaderBytes and file_size
  // (DataLoss naming the file otherwise).
  static Result<uint64_t> HeaderLength(const uint8_t* bytes, size_t available, uint64_t file_size,
                                       const std::string& name_for_errors);

  const std::string& path() const { return path_; }
  // Bytes of the whole file (length field + header + data area).
  uint64_t file_size() const { return file_size_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorView* Find(const std::string& name) const;

 private:
  std::string path_;
  uint64_t file_size_ = 0;
  std::unique_ptr<MappedFile> file_;  // null for Parse()
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write. `data` must hold exactly product(shape) x DTypeSize(dtype) bytes.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kSentinel;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// Ok when `tensor` can be written: a non-empty name other than "__metadata__", a valid dtype,
// non-negative dims, and data.size() == product(shape) x DTypeSize(dtype). `context` (a path) prefixes
// the message.
Status CheckTensorToWrite(const std::string& context, const TensorToWrite& tensor);

// Writes one safetensors file: header padded with spaces to a multiple of 8 bytes (as the Rust
// implementation does), tensor data laid out largest element size first (stable: otherwise in the given
// order) so every tensor is aligned to its element size, written under a temporary name and renamed.
Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

}  // namespace k3::io
