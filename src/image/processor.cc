// The reference processor's steps after decoding, in its order (K3: resize first, composite after):
//   Pillow resize (mode rules: palette / bilevel nearest, RGBA / LA premultiplied bicubic, the rest
//   bicubic), then fill_transparent_bg_with (RGB passes; images without alpha or a transparency key
//   are converted to RGB; the rest are converted to RGBA and blended in float32 over the background,
//   truncated to uint8), then pad with 0, normalise in float64 -> float32, patchify.
#include "src/image/processor.h"

#include <algorithm>
#include <cstring>

#include "src/image/resample.h"

namespace k3::image {
namespace {

inline uint8_t MulDiv255(unsigned a, unsigned b) {
  const unsigned tmp = a * b + 128;
  return static_cast<uint8_t>(((tmp >> 8) + tmp) >> 8);
}

size_t PixelCount(const DecodedImage& image) { return static_cast<size_t>(image.width) * image.height; }

// Pillow's convert("RGB").
std::vector<uint8_t> ToRgb(const DecodedImage& image) {
  const size_t n = PixelCount(image);
  std::vector<uint8_t> out(n * 3);
  const uint8_t* in = image.pixels.data();
  for (size_t i = 0; i < n; ++i) {
    uint8_t* o = &out[i * 3];
    switch (image.mode) {
      case PixelMode::kBilevel:
      case PixelMode::kL:
        o[0] = o[1] = o[2] = in[i];
        break;
      case PixelMode::kLA:
        o[0] = o[1] = o[2] = in[i * 2];
        break;
      case PixelMode::kP:
        std::memcpy(o, &image.palette[in[i] * 4], 3);
        break;
      case PixelMode::kRGB:
        std::memcpy(o, &in[i * 3], 3);
        break;
      case PixelMode::kRGBA:
        std::memcpy(o, &in[i * 4], 3);
        break;
      case PixelMode::kCMYK: {
        const unsigned nk = 255 - in[i * 4 + 3];
        for (int c = 0; c < 3; ++c)
          o[c] = static_cast<uint8_t>(std::clamp<int>(nk - MulDiv255(in[i * 4 + c], nk), 0, 255));
        break;
      }
      case PixelMode::kI32:
        o[0] = o[1] = o[2] = static_cast<uint8_t>(std::clamp<int32_t>(image.wide[i], 0, 255));
        break;
    }
  }
  return out;
}

// Pillow's convert("RGBA"), honouring info["transparency"].
std::vector<uint8_t> ToRgba(const DecodedImage& image) {
  const size_t n = PixelCount(image);
  if (image.mode == PixelMode::kRGBA) return image.pixels;
  std::vector<uint8_t> out(n * 4);
  if (image.mode == PixelMode::kP) {
    for (size_t i = 0; i < n; ++i) std::memcpy(&out[i * 4], &image.palette[image.pixels[i] * 4], 4);
    return out;
  }
  if (image.mode == PixelMode::kLA) {
    for (size_t i = 0; i < n; ++i) {
      out[i * 4] = out[i * 4 + 1] = out[i * 4 + 2] = image.pixels[i * 2];
      out[i * 4 + 3] = image.pixels[i * 2 + 1];
    }
    return out;
  }
  const std::vector<uint8_t> rgb = ToRgb(image);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(&out[i * 4], &rgb[i * 3], 3);
    bool transparent = false;
    if (image.has_transparency) {
      if (image.mode == PixelMode::kL || image.mode == PixelMode::kBilevel)
        transparent = image.pixels[i] == image.transparent_key;
      else if (image.mode == PixelMode::kI32)
        transparent = image.wide[i] == image.transparent_key;
    }
    out[i * 4 + 3] = transparent ? 0 : 255;
  }
  return out;
}

DecodedImage WithRgb(const DecodedImage& like, std::vector<uint8_t> rgb) {
  DecodedImage out;
  out.format = like.format;
  out.mode = PixelMode::kRGB;
  out.width = like.width;
  out.height = like.height;
  out.pixels = std::move(rgb);
  return out;
}

// The reference's fill_transparent_bg_with.
DecodedImage FillTransparent(const DecodedImage& image, const ProcessorConfig& config) {
  if (!config.transparent_bg.has_value()) return WithRgb(image, ToRgb(image));
  if (image.mode == PixelMode::kRGB) return image;
  const bool has_alpha =
      image.mode == PixelMode::kLA || image.mode == PixelMode::kRGBA || image.has_transparency;
  if (!has_alpha) return WithRgb(image, ToRgb(image));
  const std::vector<uint8_t> rgba = ToRgba(image);
  const TransparentBackground& bg = *config.transparent_bg;
  std::vector<uint8_t> rgb(PixelCount(image) * 3);
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const size_t i = static_cast<size_t>(y) * image.width + x;
      const float back = static_cast<float>(bg.ValueAt(x, y));
      // numpy: alpha (float32) = a / 255.0; alpha * rgb + (1 - alpha) * bg in float32; astype(uint8).
      const float alpha = static_cast<float>(rgba[i * 4 + 3]) / 255.0f;
      const float inv = 1.0f - alpha;
      for (int c = 0; c < 3; ++c) {
        const float front = alpha * static_cast<float>(rgba[i * 4 + c]);
        const float behind = inv * back;
        const float sum = front + behind;
        rgb[i * 3 + c] = static_cast<uint8_t>(sum);
      }
    }
  }
  return WithRgb(image, std::move(rgb));
}

// Pillow's Image.resize(size, BICUBIC) with its per-mode rules.
DecodedImage Resize(const DecodedImage& image, int width, int height) {
  if (image.width == width && image.height == height) return image;
  DecodedImage out;
  out.format = image.format;
  out.mode = image.mode;
  out.width = width;
  out.height = height;
  out.palette = image.palette;
  out.has_transparency = image.has_transparency;
  out.transparent_key = image.transparent_key;
  const int channels = ChannelCount(image.mode);
  switch (image.mode) {
    case PixelMode::kP:
    case PixelMode::kBilevel:
      out.pixels = ResizeNearest8(image.pixels, image.width, image.height, 1, width, height);
      break;
    case PixelMode::kI32:
      out.wide = ResizeBicubic32(image.wide, image.width, image.height, width, height);
      break;
    case PixelMode::kLA:
    case PixelMode::kRGBA: {
      // Premultiplied ("RGBa" / "La"), resized, then divided back.
      std::vector<uint8_t> pre = image.pixels;
      const size_t n = PixelCount(image);
      for (size_t i = 0; i < n; ++i) {
        uint8_t* p = &pre[i * channels];
        const uint8_t a = p[channels - 1];
        for (int c = 0; c < channels - 1; ++c) p[c] = MulDiv255(p[c], a);
      }
      out.pixels = ResizeBicubic8(pre, image.width, image.height, channels, width, height);
      const size_t m = static_cast<size_t>(width) * height;
      for (size_t i = 0; i < m; ++i) {
        uint8_t* p = &out.pixels[i * channels];
        const unsigned a = p[channels - 1];
        if (a == 0 || a == 255) continue;
        for (int c = 0; c < channels - 1; ++c)
          p[c] = static_cast<uint8_t>(std::min<unsigned>(255u, 255u * p[c] / a));
      }
      break;
    }
    default:
      out.pixels = ResizeBicubic8(image.pixels, image.width, image.height, channels, width, height);
      break;
  }
  return out;
}

}  // namespace

int ChannelCount(PixelMode mode) {
  switch (mode) {
    case PixelMode::kBilevel:
    case PixelMode::kL:
    case PixelMode::kP:
      return 1;
    case PixelMode::kLA:
      return 2;
    case PixelMode::kRGB:
      return 3;
    case PixelMode::kRGBA:
    case PixelMode::kCMYK:
      return 4;
    case PixelMode::kI32:
      return 0;
  }
  return 0;
}

const char* ModeName(PixelMode mode) {
  switch (mode) {
    case PixelMode::kBilevel:
      return "1";
    case PixelMode::kL:
      return "L";
    case PixelMode::kLA:
      return "LA";
    case PixelMode::kP:
      return "P";
    case PixelMode::kRGB:
      return "RGB";
    case PixelMode::kRGBA:
      return "RGBA";
    case PixelMode::kCMYK:
      return "CMYK";
    case PixelMode::kI32:
      return "I";
  }
  return "?";
}

std::vector<uint8_t> ResizedRgb(const DecodedImage& image, const ImageGeometry& geometry,
                                const ProcessorConfig& config) {
  if (config.fill_stage == FillStage::kBeforeResize) {
    const DecodedImage filled = FillTransparent(image, config);
    return Resize(filled, geometry.resized_width, geometry.resized_height).pixels;
  }
  const DecodedImage resized = Resize(image, geometry.resized_width, geometry.resized_height);
  return FillTransparent(resized, config).pixels;
}

ProcessedImage ProcessDecoded(const DecodedImage& image, const ProcessorConfig& config) {
  ProcessedImage out;
  out.format = image.format;
  out.geometry = PlanGeometry({image.width, image.height}, config);
  const ImageGeometry& g = out.geometry;
  const std::vector<uint8_t> rgb = ResizedRgb(image, g, config);

  // value[c][x] for every byte x: (float32(x / 255.0) - mean) * (1 / std), each step rounded to
  // float32 as numpy does (float32 array, float64 operands, float32 output).
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    const double std_inv = 1.0 / config.image_std[c];
    for (int x = 0; x < 256; ++x) {
      const float scaled = static_cast<float>(x / 255.0);
      const float centred = static_cast<float>(static_cast<double>(scaled) - config.image_mean[c]);
      table[c][x] = static_cast<float>(static_cast<double>(centred) * std_inv);
    }
  }
  const int p = config.patch_size;
  const size_t patch_values = static_cast<size_t>(3) * p * p;
  out.patches.resize(static_cast<size_t>(g.grid_h) * g.grid_w * patch_values);
  float* dst = out.patches.data();
  for (int gh = 0; gh < g.grid_h; ++gh) {
    for (int gw = 0; gw < g.grid_w; ++gw) {
      for (int c = 0; c < 3; ++c) {
        for (int py = 0; py < p; ++py) {
          const int y = gh * p + py;
          for (int px = 0; px < p; ++px) {
            const int x = gw * p + px;
            const bool inside = y < g.resized_height && x < g.resized_width;
            const uint8_t v = inside ? rgb[(static_cast<size_t>(y) * g.resized_width + x) * 3 + c] : 0;
            *dst++ = table[c][v];
          }
        }
      }
    }
  }
  return out;
}

Result<ProcessedImage> ProcessImage(std::span<const uint8_t> bytes, const ProcessorConfig& config,
                                    const DecodeLimits& limits, std::string_view declared_mime) {
  if (!declared_mime.empty()) K3_RETURN_IF_ERROR(CheckDeclaredMime(declared_mime, SniffFormat(bytes)));
  K3_ASSIGN_OR_RETURN(DecodedImage image, DecodeImage(bytes, limits));
  return ProcessDecoded(image, config);
}

}  // namespace k3::image
