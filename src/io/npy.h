// WriteNpyFloat32: a float32 array as a NumPy .npy file (format version 1.0, little-endian, C order),
// for `k3 run --dump-logits` so an independent implementation can compare logits with numpy.load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace k3::io {

// data: prod(shape) floats. The file is written atomically (a crash leaves no half-written file).
Status WriteNpyFloat32(const std::string& path, const float* data, const std::vector<int64_t>& shape);

}  // namespace k3::io
