// Relative L2 error of a result against a reference (the golden tests' measure: model, vision tower,
// image prompt). Header-only so tests of the model core (also cross-built for arm64) need no library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace k3::model::testing {

// ||got - want|| / ||want|| over n values, in double.
inline double RelL2(const float* got, const float* want, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace k3::model::testing
