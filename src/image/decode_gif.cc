// The first frame of a GIF through giflib, as Pillow 9 opens it: mode "P" with the frame's palette
// (local, else global), or "L" when the palette is absent or the identity grey ramp; the canvas is the
// logical screen, grown to hold the frame; outside the frame it holds the transparent index (or 0).
// The graphic control extension before the frame gives the transparent index. Only the first frame's
// data is read, and the screen size is checked against the limits before anything is allocated.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "src/image/decoders.h"

namespace k3::image::internal {
namespace {

struct GifSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

int GifRead(GifFileType* gif, GifByteType* out, int length) {
  auto* src = static_cast<GifSource*>(gif->UserData);
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(length, 0)), src->size - src->pos);
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
  return static_cast<int>(n);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

Status GifError(const char* what, int code) {
  const char* text = GifErrorString(code);
  return InvalidArgument("gif: {}: {}", what, text != nullptr ? text : "unknown error");
}

// Pillow's test: a palette equal to 0,0,0, 1,1,1, 2,2,2, ... is no palette (mode "L").
bool IsGreyRamp(const ColorMapObject* map) {
  for (int i = 0; i < map->ColorCount; ++i) {
    const GifColorType& c = map->Colors[i];
    if (c.Red != i || c.Green != i || c.Blue != i) return false;
  }
  return true;
}

}  // namespace

Result<DecodedImage> DecodeGif(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  GifSource src{bytes.data(), bytes.size(), 0};
  int error = 0;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&src, GifRead, &error));
  if (gif == nullptr) return GifError("cannot read the header", error);
  // A 0 x 0 screen is legal (Pillow grows the canvas to the frame); the canvas is checked again below.
  K3_RETURN_IF_ERROR(CheckImageSize("gif", std::max(gif->SWidth, 1), std::max(gif->SHeight, 1), limits));

  int transparency = -1;
  while (true) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif.get(), &type) == GIF_ERROR) return GifError("bad record", gif->Error);
    if (type == TERMINATE_RECORD_TYPE) return InvalidArgument("gif: the file has no image");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif.get(), &code, &ext) == GIF_ERROR) return GifError("bad extension", gif->Error);
      if (code == GRAPHICS_EXT_FUNC_CODE && ext != nullptr && ext[0] >= 4) {
        transparency = (ext[1] & 1) != 0 ? ext[4] : -1;
      }
      while (ext != nullptr) {
        if (DGifGetExtensionNext(gif.get(), &ext) == GIF_ERROR) return GifError("bad extension", gif->Error);
      }
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE)
      return InvalidArgument("gif: unknown record type {}", static_cast<int>(type));
    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) return GifError("bad image descriptor", gif->Error);
    break;
  }

  const GifImageDesc& desc = gif->Image;
  const int64_t canvas_w = std::max<int64_t>(gif->SWidth, int64_t{desc.Left} + desc.Width);
  const int64_t canvas_h = std::max<int64_t>(gif->SHeight, int64_t{desc.Top} + desc.Height);
  K3_RETURN_IF_ERROR(CheckImageSize("gif", canvas_w, canvas_h, limits));
  if (desc.Width <= 0 || desc.Height <= 0) return InvalidArgument("gif: the first frame is empty");

  DecodedImage image;
  image.format = "gif";
  image.width = static_cast<int>(canvas_w);
  image.height = static_cast<int>(canvas_h);
  const ColorMapObject* map = desc.ColorMap != nullptr ? desc.ColorMap : gif->SColorMap;
  image.mode = map == nullptr || IsGreyRamp(map) ? PixelMode::kL : PixelMode::kP;
  if (image.mode == PixelMode::kP) {
    for (int i = 0; i < 256; ++i) image.palette[i * 4 + 3] = 255;
    for (int i = 0; i < map->ColorCount && i < 256; ++i) {
      image.palette[i * 4 + 0] = map->Colors[i].Red;
      image.palette[i * 4 + 1] = map->Colors[i].Green;
      image.palette[i * 4 + 2] = map->Colors[i].Blue;
    }
  }
  if (transparency >= 0) {
    image.has_transparency = true;
    image.transparent_key = transparency;
    if (image.mode == PixelMode::kP) image.palette[transparency * 4 + 3] = 0;
  }
  image.pixels.assign(static_cast<size_t>(canvas_w) * canvas_h,
                      static_cast<uint8_t>(std::max(transparency, 0)));

  std::vector<GifPixelType> line(desc.Width);
  const auto read_row = [&](int row) -> Status {
    if (DGifGetLine(gif.get(), line.data(), desc.Width) == GIF_ERROR)
      return GifError("image data", gif->Error);
    uint8_t* out = image.pixels.data() + (static_cast<size_t>(desc.Top) + row) * canvas_w + desc.Left;
    std::memcpy(out, line.data(), line.size());
    return OkStatus();
  };
  if (desc.Interlace) {
    static constexpr int kStart[4] = {0, 4, 2, 1};
    static constexpr int kStep[4] = {8, 8, 4, 2};
    for (int pass = 0; pass < 4; ++pass) {
      for (int row = kStart[pass]; row < desc.Height; row += kStep[pass]) K3_RETURN_IF_ERROR(read_row(row));
    }
  } else {
    for (int row = 0; row < desc.Height; ++row) K3_RETURN_IF_ERROR(read_row(row));
  }
  return image;
}

}  // namespace k3::image::internal
