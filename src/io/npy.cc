// WriteNpyFloat32 (npy.h): magic, version 1.0, a header dict padded to 64 bytes, then the raw floats.
#include "src/io/npy.h"

#include <cstring>

#include <fmt/format.h>

#include "src/base/file.h"

namespace k3::io {

Status WriteNpyFloat32(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  std::string dims;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgument("{}: negative dimension {}", path, d);
    count *= d;
    dims += fmt::format("{}, ", d);
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(3, 4)"; one dimension keeps "(3, )"
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  const size_t preamble = 6 + 2 + 2;  // magic, version, header length
  const size_t padded = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(padded - preamble - header.size() - 1, ' ');
  header.push_back('\n');
  std::string bytes = "\x93NUMPY";
  bytes.push_back('\x01');
  bytes.push_back('\x00');
  const uint16_t header_len = static_cast<uint16_t>(header.size());
  bytes.push_back(static_cast<char>(header_len & 0xff));
  bytes.push_back(static_cast<char>(header_len >> 8));
  bytes += header;
  const size_t offset = bytes.size();
  bytes.resize(offset + static_cast<size_t>(count) * sizeof(float));
  if (count > 0) std::memcpy(bytes.data() + offset, data, static_cast<size_t>(count) * sizeof(float));
  return WriteFileAtomic(path, bytes);
}

}  // namespace k3::io
