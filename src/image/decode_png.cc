// PNG through libpng, into Pillow's modes: grey 1-bit "1", grey 2/4/8-bit "L" (scaled to 8 bits),
// grey 16-bit "I" (int32), RGB / RGBA (16-bit keeps the high byte, as Pillow's ";16B" unpackers do),
// grey+alpha 8-bit "LA" (16-bit: "RGBA"), palette "P" with tRNS alphas. A grey tRNS becomes a key; an
// RGB tRNS is dropped (the reference returns RGB images untouched). Ancillary text / ICC chunks are
// skipped without inflating them.
//
// libpng reports errors by longjmp: the two functions that call setjmp (ReadPngHeader, ReadPngRows) hold no
// C++ objects, and every buffer they write is allocated by their caller.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "src/image/decoders.h"

namespace k3::image::internal {
namespace {

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char error[256];
};

void PngReadData(png_structp png, png_bytep out, size_t length) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > src->size - src->pos) png_error(png, "file is truncated");
  std::memcpy(out, src->data + src->pos, length);
  src->pos += length;
}

void PngErrorFn(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->error, sizeof(src->error), "%s", message);
  png_longjmp(png, 1);
}

void PngWarningFn(png_structp, png_const_charp) {}

struct PngHeader {
  png_uint_32 width;
  png_uint_32 height;
  int bit_depth;
  int color_type;
  int interlace;
};

// Reads the chunks before IDAT. Returns false on a libpng error (message in the source).
bool ReadPngHeader(png_structp png, png_infop info, PngHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  png_get_IHDR(png, info, &header->width, &header->height, &header->bit_depth, &header->color_type,
               &header->interlace, nullptr, nullptr);
  return true;
}

// Sets the transforms and reads every row (all passes when interlaced).
bool ReadPngRows(png_structp png, png_infop info, const PngHeader* header, png_bytep* rows,
                 bool gray_to_rgb) {
  if (setjmp(png_jmpbuf(png))) return false;
  if (header->bit_depth == 16 && header->color_type != PNG_COLOR_TYPE_GRAY) png_set_strip_16(png);
  if (header->bit_depth < 8) {
    if (header->color_type == PNG_COLOR_TYPE_GRAY)
      png_set_expand_gray_1_2_4_to_8(png);
    else
      png_set_packing(png);
  }
  if (gray_to_rgb) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  png_read_image(png, rows);
  return true;
}

struct PngHandles {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngHandles() { png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr); }
};

}  // namespace

Result<DecodedImage> DecodePng(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  PngSource src{bytes.data(), bytes.size(), 0, {}};
  PngHandles h;
  h.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, PngErrorFn, PngWarningFn);
  if (h.png == nullptr) return Internal("png: cannot create a libpng reader");
  h.info = png_create_info_struct(h.png);
  if (h.info == nullptr) return Internal("png: cannot create a libpng info struct");
  png_set_read_fn(h.png, &src, PngReadData);
  // Sizes are checked below (CheckImageSize, with a message naming the limit); libpng's own cap is lifted.
  png_set_user_limits(h.png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_set_chunk_malloc_max(h.png, 1 << 20);
  // Text and ICC chunks are skipped unread (a compressed text chunk can inflate to gigabytes).
  static const png_byte kSkipped[] = "iCCP\0iTXt\0tEXt\0zTXt\0eXIf\0sPLT\0";
  png_set_keep_unknown_chunks(h.png, PNG_HANDLE_CHUNK_NEVER, kSkipped, 6);
  png_set_keep_unknown_chunks(h.png, PNG_HANDLE_CHUNK_NEVER, nullptr, 0);

  PngHeader header{};
  if (!ReadPngHeader(h.png, h.info, &header)) return InvalidArgument("png: {}", src.error);
  K3_RETURN_IF_ERROR(CheckImageSize("png", header.width, header.height, limits));

  DecodedImage image;
  image.format = "png";
  image.width = static_cast<int>(header.width);
  image.height = static_cast<int>(header.height);
  bool gray_to_rgb = false;
  int row_bytes_per_pixel = 0;
  switch (header.color_type) {
    case PNG_COLOR_TYPE_GRAY:
      image.mode = header.bit_depth == 1    ? PixelMode::kBilevel
                   : header.bit_depth == 16 ? PixelMode::kI32
                                            : PixelMode::kL;
      row_bytes_per_pixel = header.bit_depth == 16 ? 2 : 1;
      break;
    case PNG_COLOR_TYPE_RGB:
      image.mode = PixelMode::kRGB;
      row_bytes_per_pixel = 3;
      break;
    case PNG_COLOR_TYPE_PALETTE:
      image.mode = PixelMode::kP;
      row_bytes_per_pixel = 1;
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      gray_to_rgb = header.bit_depth == 16;  // Pillow opens 16-bit grey+alpha as RGBA ("LA;16B")
      image.mode = gray_to_rgb ? PixelMode::kRGBA : PixelMode::kLA;
      row_bytes_per_pixel = gray_to_rgb ? 4 : 2;
      break;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      image.mode = PixelMode::kRGBA;
      row_bytes_per_pixel = 4;
      break;
    default:
      return InvalidArgument("png: unknown colour type {}", header.color_type);
  }

  // Transparency as Pillow records it in info["transparency"].
  png_bytep trans_alpha = nullptr;
  int num_trans = 0;
  png_color_16p trans_color = nullptr;
  const bool has_trns = png_get_tRNS(h.png, h.info, &trans_alpha, &num_trans, &trans_color) != 0;
  if (image.mode == PixelMode::kP) {
    png_colorp palette = nullptr;
    int num_palette = 0;
    if (png_get_PLTE(h.png, h.info, &palette, &num_palette) == 0)
      return InvalidArgument("png: palette image without a PLTE chunk");
    for (int i = 0; i < 256; ++i) image.palette[i * 4 + 3] = 255;
    for (int i = 0; i < num_palette && i < 256; ++i) {
      image.palette[i * 4 + 0] = palette[i].red;
      image.palette[i * 4 + 1] = palette[i].green;
      image.palette[i * 4 + 2] = palette[i].blue;
    }
    if (has_trns && trans_alpha != nullptr) {
      image.has_transparency = true;
      for (int i = 0; i < num_trans && i < 256; ++i) image.palette[i * 4 + 3] = trans_alpha[i];
    }
  } else if (has_trns && trans_color != nullptr && header.color_type == PNG_COLOR_TYPE_GRAY) {
    image.has_transparency = true;
    image.transparent_key = trans_color->gray;  // the raw sample, unscaled, as Pillow keeps it
  }

  const size_t row_bytes = static_cast<size_t>(image.width) * row_bytes_per_pixel;
  std::vector<uint8_t> raw(row_bytes * image.height);
  std::vector<png_bytep> rows(image.height);
  for (int y = 0; y < image.height; ++y) rows[y] = raw.data() + row_bytes * y;
  if (!ReadPngRows(h.png, h.info, &header, rows.data(), gray_to_rgb))
    return InvalidArgument("png: {}", src.error);
  if (png_get_rowbytes(h.png, h.info) != row_bytes)
    return Internal("png: unexpected row size after transforms");

  if (image.mode == PixelMode::kI32) {
    image.wide.resize(static_cast<size_t>(image.width) * image.height);
    for (size_t i = 0; i < image.wide.size(); ++i) image.wide[i] = (raw[2 * i] << 8) | raw[2 * i + 1];
  } else {
    image.pixels = std::move(raw);
  }
  return image;
}

}  // namespace k3::image::internal
