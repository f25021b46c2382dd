// WebP through libwebp's animation decoder (what Pillow 9 uses for every WebP file): the first frame,
// composited on the canvas, as "RGBA" when the bitstream has alpha and "RGB" otherwise. The canvas size
// comes from WebPGetFeatures and is checked against the limits before the decoder allocates it.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>

#include "src/image/decoders.h"

namespace k3::image::internal {
namespace {

struct AnimDecoderDeleter {
  void operator()(WebPAnimDecoder* dec) const { WebPAnimDecoderDelete(dec); }
};

const char* StatusText(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "file is truncated";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    default:
      return "cannot read the header";
  }
}

}  // namespace

Result<DecodedImage> DecodeWebp(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) return InvalidArgument("webp: {}", StatusText(status));
  K3_RETURN_IF_ERROR(CheckImageSize("webp", features.width, features.height, limits));

  WebPData data{bytes.data(), bytes.size()};
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) return Internal("webp: decoder version mismatch");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDeleter> dec(WebPAnimDecoderNew(&data, &options));
  if (dec == nullptr) return InvalidArgument("webp: file is truncated or corrupt");
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(dec.get(), &info)) return InvalidArgument("webp: file is truncated or corrupt");
  K3_RETURN_IF_ERROR(CheckImageSize("webp", info.canvas_width, info.canvas_height, limits));
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec.get(), &rgba, &timestamp) || rgba == nullptr)
    return InvalidArgument("webp: cannot decode the first frame (truncated or corrupt)");

  DecodedImage image;
  image.format = "webp";
  image.width = static_cast<int>(info.canvas_width);
  image.height = static_cast<int>(info.canvas_height);
  const size_t count = static_cast<size_t>(image.width) * image.height;
  if (features.has_alpha) {
    image.mode = PixelMode::kRGBA;
    image.pixels.assign(rgba, rgba + count * 4);
  } else {
    image.mode = PixelMode::kRGB;
    image.pixels.resize(count * 3);
    for (size_t i = 0; i < count; ++i) std::memcpy(&image.pixels[i * 3], rgba + i * 4, 3);
  }
  return image;
}

}  // namespace k3::image::internal
