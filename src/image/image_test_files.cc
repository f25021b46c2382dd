// In-memory test images (see image_test_files.h).
#include "src/image/image_test_files.h"

#include <gif_lib.h>
#include <webp/encode.h>
#include <zlib.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <jpeglib.h>

namespace k3::image::testing {
namespace {

void Put32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xFF);
}

int GifWrite(GifFileType* gif, const GifByteType* data, int length) {
  auto* out = static_cast<Bytes*>(gif->UserData);
  out->insert(out->end(), data, data + length);
  return length;
}

}  // namespace

Bytes Pattern(int width, int height, int channels, int seed) {
  Bytes out(static_cast<size_t>(width) * height * channels);
  uint32_t state = 2463534242u + static_cast<uint32_t>(seed);
  for (size_t i = 0; i < out.size(); ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const size_t pixel = i / channels;
    const int x = static_cast<int>(pixel % width), y = static_cast<int>(pixel / width);
    out[i] =
        static_cast<uint8_t>((x * 7 + y * 3 + static_cast<int>(i % channels) * 50 + (state & 15)) & 0xFF);
  }
  return out;
}

std::string PngChunk(std::string_view type, std::string_view data) {
  std::string out;
  Put32(out, static_cast<uint32_t>(data.size()));
  std::string body(type);
  body += data;
  out += body;
  Put32(out, static_cast<uint32_t>(
                 crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
  return out;
}

std::string Deflate(std::string_view raw, int level) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), level) != Z_OK)
    throw std::runtime_error("compress2 failed");
  out.resize(size);
  return out;
}

Bytes PngWithHeader(uint32_t width, uint32_t height, int bit_depth, int color_type,
                    std::string_view idat_zlib, std::string_view extra_chunks) {
  std::string ihdr;
  Put32(ihdr, width);
  Put32(ihdr, height);
  ihdr += static_cast<char>(bit_depth);
  ihdr += static_cast<char>(color_type);
  ihdr += std::string(3, '\0');
  std::string file = "\x89PNG\r\n\x1a\n";
  file += PngChunk("IHDR", ihdr);
  file += extra_chunks;
  file += PngChunk("IDAT", idat_zlib);
  file += PngChunk("IEND", "");
  return Bytes(file.begin(), file.end());
}

Bytes Png(const Bytes& pixels, int width, int height, int color_type) {
  const int channels = color_type == 0   ? 1
                       : color_type == 2 ? 3
                       : color_type == 4 ? 2
                       : color_type == 6 ? 4
                                         : 1;
  std::string raw;
  for (int y = 0; y < height; ++y) {
    raw += '\0';
    raw.append(reinterpret_cast<const char*>(&pixels[static_cast<size_t>(y) * width * channels]),
               static_cast<size_t>(width) * channels);
  }
  return PngWithHeader(width, height, 8, color_type, Deflate(raw));
}

Bytes Jpeg(const Bytes& rgb, int width, int height, bool progressive) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&rgb[static_cast<size_t>(cinfo.next_scanline) * width * 3]);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

Bytes Webp(const Bytes& pixels, int width, int height, bool alpha, bool lossless) {
  uint8_t* out = nullptr;
  size_t size = 0;
  const int stride = width * (alpha ? 4 : 3);
  if (lossless) {
    size = alpha ? WebPEncodeLosslessRGBA(pixels.data(), width, height, stride, &out)
                 : WebPEncodeLosslessRGB(pixels.data(), width, height, stride, &out);
  } else {
    size = alpha ? WebPEncodeRGBA(pixels.data(), width, height, stride, 80, &out)
                 : WebPEncodeRGB(pixels.data(), width, height, stride, 80, &out);
  }
  if (size == 0) throw std::runtime_error("WebP encoding failed");
  Bytes bytes(out, out + size);
  WebPFree(out);
  return bytes;
}

Bytes Gif(const Bytes& indices, int width, int height, int transparent, int screen_width, int screen_height) {
  Bytes out;
  int error = 0;
  GifFileType* gif = EGifOpen(&out, GifWrite, &error);
  if (gif == nullptr) throw std::runtime_error("EGifOpen failed");
  EGifSetGifVersion(gif, true);
  GifColorType colours[256];
  for (int i = 0; i < 256; ++i) {
    colours[i].Red = static_cast<GifByteType>(i);
    colours[i].Green = static_cast<GifByteType>(255 - i);
    colours[i].Blue = static_cast<GifByteType>(i / 2);
  }
  ColorMapObject* map = GifMakeMapObject(256, colours);
  EGifPutScreenDesc(gif, screen_width > 0 ? screen_width : width, screen_height > 0 ? screen_height : height,
                    8, 0, map);
  if (transparent >= 0) {
    GraphicsControlBlock gcb{};
    gcb.DisposalMode = DISPOSAL_UNSPECIFIED;
    gcb.TransparentColor = transparent;
    GifByteType ext[4];
    const size_t len = EGifGCBToExtension(&gcb, ext);
    EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, static_cast<int>(len), ext);
  }
  EGifPutImageDesc(gif, 0, 0, width, height, false, nullptr);
  for (int y = 0; y < height; ++y)
    EGifPutLine(gif, const_cast<GifPixelType*>(&indices[static_cast<size_t>(y) * width]), width);
  EGifCloseFile(gif, &error);
  GifFreeMapObject(map);
  return out;
}

}  // namespace k3::image::testing
