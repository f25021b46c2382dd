// PNG and JPEG encoding into memory. libpng and libjpeg report fatal errors by longjmp: the functions
// that call setjmp (WritePng, WriteJpeg) hold no C++ objects with destructors between setjmp and the
// library calls; the output goes to a plain C buffer owned by the caller's struct.
#include "src/image/encode.h"

// jpeglib.h needs size_t and FILE declared first.
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <random>

#include "src/base/base64.h"

namespace k3::image {
namespace {

constexpr int kMaxEncodedSide = 65535;

Status CheckPixels(const std::vector<uint8_t>& rgb, int width, int height) {
  if (width < 1 || height < 1 || width > kMaxEncodedSide || height > kMaxEncodedSide) {
    return InvalidArgument("image size {}x{}: each side must be 1..{}", width, height, kMaxEncodedSide);
  }
  if (rgb.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 3) {
    return InvalidArgument("image {}x{}: {} bytes of RGB, expected {}", width, height, rgb.size(),
                           static_cast<size_t>(width) * height * 3);
  }
  return OkStatus();
}

// A growable C buffer (realloc) that libpng's write callback appends to.
struct MemoryOut {
  unsigned char* data = nullptr;
  size_t size = 0;
  size_t capacity = 0;
  bool failed = false;
  char message[256] = {0};  // libpng's error text (PngErrorExit writes it before the longjmp)
};

void PngWrite(png_structp png, png_bytep bytes, png_size_t length) {
  auto* out = static_cast<MemoryOut*>(png_get_io_ptr(png));
  if (out->failed) return;
  if (out->size + length > out->capacity) {
    size_t capacity = out->capacity == 0 ? 4096 : out->capacity;
    while (capacity < out->size + length) capacity *= 2;
    auto* grown = static_cast<unsigned char*>(std::realloc(out->data, capacity));
    if (grown == nullptr) {
      out->failed = true;
      png_error(png, "out of memory");
    }
    out->data = grown;
    out->capacity = capacity;
  }
  std::memcpy(out->data + out->size, bytes, length);
  out->size += length;
}

void PngFlush(png_structp) {}

void PngErrorExit(png_structp png, png_const_charp message) {
  auto* out = static_cast<MemoryOut*>(png_get_error_ptr(png));
  std::snprintf(out->message, sizeof(out->message), "%s", message);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

// Returns false on a libpng error.
bool WritePng(const uint8_t* rgb, int width, int height, MemoryOut* out) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, out, PngErrorExit, PngWarning);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, PngWrite, PngFlush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) {
    png_write_row(png, const_cast<png_bytep>(rgb + static_cast<size_t>(y) * width * 3));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

struct JpegWriteError {
  jpeg_error_mgr pub;  // first: libjpeg casts cinfo->err to this struct
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void JpegWriteErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegWriteError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

// Returns false on a libjpeg error (err->message says which). *buffer is malloc'ed by libjpeg.
bool WriteJpeg(const uint8_t* rgb, int width, int height, int quality, JpegWriteError* err,
               unsigned char** buffer, unsigned long* size) {
  jpeg_compress_struct cinfo;
  std::memset(&cinfo, 0, sizeof(cinfo));
  cinfo.err = jpeg_std_error(&err->pub);
  err->pub.error_exit = JpegWriteErrorExit;
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buffer, size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(rgb + static_cast<size_t>(cinfo.next_scanline) * width * 3);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

const char* EncodeMimeType(EncodeFormat format) {
  return format == EncodeFormat::kPng ? "image/png" : "image/jpeg";
}

Result<std::string> EncodePng(const std::vector<uint8_t>& rgb, int width, int height) {
  K3_RETURN_IF_ERROR(CheckPixels(rgb, width, height));
  MemoryOut out;
  const bool ok = WritePng(rgb.data(), width, height, &out);
  std::string bytes;
  if (ok) bytes.assign(reinterpret_cast<const char*>(out.data), out.size);
  std::free(out.data);
  if (!ok) return Internal("PNG encoding of a {}x{} image failed: {}", width, height, out.message);
  return bytes;
}

Result<std::string> EncodeJpeg(const std::vector<uint8_t>& rgb, int width, int height, int quality) {
  K3_RETURN_IF_ERROR(CheckPixels(rgb, width, height));
  if (quality < 1 || quality > 100) return InvalidArgument("JPEG quality {}: must be 1..100", quality);
  JpegWriteError err{};
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool ok = WriteJpeg(rgb.data(), width, height, quality, &err, &buffer, &size);
  std::string bytes;
  if (ok) bytes.assign(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  if (!ok) return Internal("JPEG encoding of a {}x{} image failed: {}", width, height, err.message);
  return bytes;
}

Result<std::string> EncodeImage(EncodeFormat format, const std::vector<uint8_t>& rgb, int width, int height) {
  return format == EncodeFormat::kPng ? EncodePng(rgb, width, height) : EncodeJpeg(rgb, width, height);
}

std::string ToDataUrl(EncodeFormat format, const std::string& encoded) {
  return std::string("data:") + EncodeMimeType(format) + ";base64," + Base64Encode(encoded);
}

std::vector<uint8_t> RandomRgb(int width, int height, uint64_t seed) {
  const size_t n = static_cast<size_t>(std::max(0, width)) * static_cast<size_t>(std::max(0, height)) * 3;
  std::vector<uint8_t> out(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  while (i < n) {
    uint64_t word = rng();
    for (int b = 0; b < 8 && i < n; ++b, word >>= 8) out[i++] = static_cast<uint8_t>(word);
  }
  return out;
}

}  // namespace k3::image
