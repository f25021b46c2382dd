// The vision goldens' input images (tools/reference/vision_reference.py's synthetic_image +
// normalise_and_patchify), bit for bit: index-th image of gh x gw patches of p x p pixels as the
// processor's normalised patches [gh * gw, 3 * p * p], patches in raster order, each channel-first.
// Header-only so tests of the model core (also cross-built for arm64) need no testing library.
#pragma once

#include <cstdint>
#include <vector>

namespace k3::model::testing {

inline std::vector<float> SyntheticPatches(int gh, int gw, int index, int p) {
  const int64_t H = int64_t{gh} * p, W = int64_t{gw} * p;
  std::vector<float> out(static_cast<size_t>(gh) * gw * 3 * p * p);
  for (int c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < H; ++y) {
      for (int64_t x = 0; x < W; ++x) {
        const uint32_t hash = (static_cast<uint32_t>(x) * 73856093u) ^
                              (static_cast<uint32_t>(y) * 19349663u) ^
                              (static_cast<uint32_t>(c + 3 * index) * 83492791u);
        const int64_t v = ((x * 255) / W + (y * 255) / H + (hash >> 13) % 64 + 40 * c) % 256;
        const float normalised = (static_cast<float>(v) / 255.0f - 0.5f) * 2.0f;
        const int64_t patch = (y / p) * gw + x / p;
        out[static_cast<size_t>(((patch * 3 + c) * p + y % p) * p + x % p)] = normalised;
      }
    }
  }
  return out;
}

}  // namespace k3::model::testing
