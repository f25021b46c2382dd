// Pillow-exact bicubic and nearest-neighbour resizing (see resample.h).
#include "src/image/resample.h"

#include <algorithm>
#include <cmath>

namespace k3::image {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

double BicubicFilter(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// One axis: for each output sample, the first input sample, the count, and `ksize` weights.
struct Coefficients {
  int ksize = 0;
  std::vector<int> bounds;  // [out, 2]: xmin, count
  std::vector<double> k;    // [out, ksize], normalised to sum 1
  std::vector<int32_t> k8;  // the same in 22-bit fixed point
};

Coefficients Precompute(int in_size, int out_size) {
  constexpr double kSupport = 2.0;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = kSupport * filterscale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(out_size) * 2);
  c.k.assign(static_cast<size_t>(out_size) * c.ksize, 0.0);
  c.k8.assign(c.k.size(), 0);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double* k = &c.k[static_cast<size_t>(xx) * c.ksize];
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = BicubicFilter((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    for (int x = 0; x < xmax; ++x) {
      if (ww != 0.0) k[x] /= ww;
    }
    c.bounds[xx * 2] = xmin;
    c.bounds[xx * 2 + 1] = xmax;
  }
  for (size_t i = 0; i < c.k.size(); ++i) {
    const double v = c.k[i] * (1 << kPrecisionBits);
    c.k8[i] = static_cast<int32_t>(c.k[i] < 0 ? v - 0.5 : v + 0.5);
  }
  return c;
}

inline uint8_t Clip8(int32_t v) {
  const int32_t shifted = v >> kPrecisionBits;  // arithmetic shift, as Pillow's lookup table index
  return static_cast<uint8_t>(std::clamp(shifted, 0, 255));
}

// Horizontal pass over rows [row0, row0 + rows).
std::vector<uint8_t> Horizontal8(const std::vector<uint8_t>& in, int width, int channels, int row0, int rows,
                                 int out_width, const Coefficients& c) {
  std::vector<uint8_t> out(static_cast<size_t>(out_width) * rows * channels);
  for (int y = 0; y < rows; ++y) {
    const uint8_t* src = &in[static_cast<size_t>(row0 + y) * width * channels];
    uint8_t* dst = &out[static_cast<size_t>(y) * out_width * channels];
    for (int xx = 0; xx < out_width; ++xx) {
      const int xmin = c.bounds[xx * 2], count = c.bounds[xx * 2 + 1];
      const int32_t* k = &c.k8[static_cast<size_t>(xx) * c.ksize];
      for (int ch = 0; ch < channels; ++ch) {
        int32_t ss = 1 << (kPrecisionBits - 1);
        for (int x = 0; x < count; ++x) ss += src[(xmin + x) * channels + ch] * k[x];
        dst[xx * channels + ch] = Clip8(ss);
      }
    }
  }
  return out;
}

std::vector<uint8_t> Vertical8(const std::vector<uint8_t>& in, int width, int channels, int row_offset,
                               int out_height, const Coefficients& c) {
  const size_t stride = static_cast<size_t>(width) * channels;
  std::vector<uint8_t> out(stride * out_height);
  std::vector<int32_t> acc(stride);
  for (int yy = 0; yy < out_height; ++yy) {
    const int ymin = c.bounds[yy * 2] - row_offset, count = c.bounds[yy * 2 + 1];
    const int32_t* k = &c.k8[static_cast<size_t>(yy) * c.ksize];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int y = 0; y < count; ++y) {
      const uint8_t* src = &in[static_cast<size_t>(ymin + y) * stride];
      const int32_t w = k[y];
      for (size_t i = 0; i < stride; ++i) acc[i] += src[i] * w;
    }
    uint8_t* dst = &out[static_cast<size_t>(yy) * stride];
    for (size_t i = 0; i < stride; ++i) dst[i] = Clip8(acc[i]);
  }
  return out;
}

inline int32_t RoundUp(double f) { return static_cast<int32_t>(f >= 0.0 ? f + 0.5F : f - 0.5F); }

}  // namespace

std::vector<uint8_t> ResizeBicubic8(const std::vector<uint8_t>& in, int width, int height, int channels,
                                    int out_width, int out_height) {
  const bool horizontal = out_width != width;
  const bool vertical = out_height != height;
  if (!horizontal && !vertical) return in;
  const Coefficients cv = Precompute(height, out_height);
  std::vector<uint8_t> tmp;
  int row_offset = 0;
  if (horizontal) {
    const Coefficients ch = Precompute(width, out_width);
    // Only the rows the vertical pass reads (Pillow's ybox_first .. ybox_last).
    int first = 0, last = height;
    if (vertical) {
      first = cv.bounds[0];
      last = cv.bounds[(out_height - 1) * 2] + cv.bounds[(out_height - 1) * 2 + 1];
    }
    tmp = Horizontal8(in, width, channels, first, last - first, out_width, ch);
    row_offset = first;
    if (!vertical) return tmp;
  }
  return Vertical8(horizontal ? tmp : in, out_width, channels, row_offset, out_height, cv);
}

std::vector<int32_t> ResizeBicubic32(const std::vector<int32_t>& in, int width, int height, int out_width,
                                     int out_height) {
  std::vector<int32_t> cur = in;
  int cur_w = width;
  if (out_width != width) {
    const Coefficients c = Precompute(width, out_width);
    std::vector<int32_t> out(static_cast<size_t>(out_width) * height);
    for (int y = 0; y < height; ++y) {
      for (int xx = 0; xx < out_width; ++xx) {
        const int xmin = c.bounds[xx * 2], count = c.bounds[xx * 2 + 1];
        const double* k = &c.k[static_cast<size_t>(xx) * c.ksize];
        double ss = 0.0;
        for (int x = 0; x < count; ++x) ss += cur[static_cast<size_t>(y) * cur_w + xmin + x] * k[x];
        out[static_cast<size_t>(y) * out_width + xx] = RoundUp(ss);
      }
    }
    cur = std::move(out);
    cur_w = out_width;
  }
  if (out_height != height) {
    const Coefficients c = Precompute(height, out_height);
    std::vector<int32_t> out(static_cast<size_t>(cur_w) * out_height);
    for (int yy = 0; yy < out_height; ++yy) {
      const int ymin = c.bounds[yy * 2], count = c.bounds[yy * 2 + 1];
      const double* k = &c.k[static_cast<size_t>(yy) * c.ksize];
      for (int x = 0; x < cur_w; ++x) {
        double ss = 0.0;
        for (int y = 0; y < count; ++y) ss += cur[static_cast<size_t>(ymin + y) * cur_w + x] * k[y];
        out[static_cast<size_t>(yy) * cur_w + x] = RoundUp(ss);
      }
    }
    cur = std::move(out);
  }
  return cur;
}

std::vector<uint8_t> ResizeNearest8(const std::vector<uint8_t>& in, int width, int height, int channels,
                                    int out_width, int out_height) {
  if (out_width == width && out_height == height) return in;
  // Pillow: affine scale with a = in / out, sampling at the pixel centre, positions accumulated by
  // repeated addition (Geometry.c ImagingScaleAffine).
  const double ax = static_cast<double>(width) / out_width;
  const double ay = static_cast<double>(height) / out_height;
  std::vector<int> xin(out_width, -1);
  double xo = ax * 0.5;
  for (int x = 0; x < out_width; ++x) {
    const int xi = xo < 0.0 ? -1 : static_cast<int>(xo);
    if (xi >= 0 && xi < width) xin[x] = xi;
    xo += ax;
  }
  std::vector<uint8_t> out(static_cast<size_t>(out_width) * out_height * channels, 0);
  double yo = ay * 0.5;
  for (int y = 0; y < out_height; ++y) {
    const int yi = yo < 0.0 ? -1 : static_cast<int>(yo);
    if (yi >= 0 && yi < height) {
      const uint8_t* src = &in[static_cast<size_t>(yi) * width * channels];
      uint8_t* dst = &out[static_cast<size_t>(y) * out_width * channels];
      for (int x = 0; x < out_width; ++x) {
        if (xin[x] < 0) continue;
        for (int ch = 0; ch < channels; ++ch) dst[x * channels + ch] = src[xin[x] * channels + ch];
      }
    }
    yo += ay;
  }
  return out;
}

}  // namespace k3::image
