// JPEG through libjpeg-turbo, into Pillow's modes: 1 component "L", 3 "RGB" (libjpeg's YCbCr -> RGB,
// islow IDCT, fancy upsampling: the defaults Pillow keeps), 4 "CMYK" (CMYK / YCCK, inverted as
// Pillow's "CMYK;I" always does). Baseline, progressive and arithmetic-coded files.
//
// Errors: libjpeg's fatal errors longjmp back into ReadJpegHeader / ReadJpegPixels, which hold no C++
// objects. Warnings are ignored (Pillow ignores them too) except premature end of file
// (JWRN_JPEG_EOF), which is an error here: a truncated file must not decode as a half-grey image.
// A progressive file with more than kMaxScans scans is refused (a cheap file can otherwise keep the
// decoder busy for minutes).
// jpeglib.h needs size_t and FILE declared first.
#include <csetjmp>
#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>

#include <vector>

#include "src/image/decoders.h"

namespace k3::image::internal {
namespace {

constexpr int kMaxScans = 1000;

struct JpegError {
  jpeg_error_mgr pub;  // first: libjpeg casts cinfo->err to this struct
  jpeg_progress_mgr progress;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 64];
};

[[noreturn]] void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  std::snprintf(err->message, sizeof(err->message), "%s", text);
  longjmp(err->jump, 1);
}

void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
    auto* err = reinterpret_cast<JpegError*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "file is truncated (premature end of JPEG data)");
    longjmp(err->jump, 1);
  }
  cinfo->err->num_warnings++;
}

void JpegProgress(j_common_ptr cinfo) {
  if (cinfo->is_decompressor == 0) return;
  auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (dinfo->input_scan_number > kMaxScans) {
    auto* err = reinterpret_cast<JpegError*>(cinfo->err);
    std::snprintf(err->message, sizeof(err->message), "more than %d progressive scans", kMaxScans);
    longjmp(err->jump, 1);
  }
}

struct JpegHeader {
  int width;
  int height;
  int components;
  J_COLOR_SPACE color_space;
};

bool ReadJpegHeader(jpeg_decompress_struct* cinfo, JpegError* err, const uint8_t* data, size_t size,
                    JpegHeader* header) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  header->width = static_cast<int>(cinfo->image_width);
  header->height = static_cast<int>(cinfo->image_height);
  header->components = cinfo->num_components;
  header->color_space = cinfo->jpeg_color_space;
  return true;
}

bool ReadJpegPixels(jpeg_decompress_struct* cinfo, JpegError* err, J_COLOR_SPACE out_space, uint8_t* out,
                    size_t row_bytes) {
  if (setjmp(err->jump)) return false;
  cinfo->out_color_space = out_space;
  jpeg_start_decompress(cinfo);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + row_bytes * cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  return true;
}

// Owns the decompressor; destroyed outside the frames that call setjmp.
struct JpegHandle {
  jpeg_decompress_struct cinfo{};
  bool created = false;
  ~JpegHandle() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

}  // namespace

Result<DecodedImage> DecodeJpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  JpegError err{};
  JpegHandle h;
  h.cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = JpegErrorExit;
  err.pub.emit_message = JpegEmitMessage;
  jpeg_create_decompress(&h.cinfo);
  h.created = true;
  err.progress.progress_monitor = JpegProgress;
  h.cinfo.progress = &err.progress;

  JpegHeader header{};
  if (!ReadJpegHeader(&h.cinfo, &err, bytes.data(), bytes.size(), &header))
    return InvalidArgument("jpeg: {}", err.message);
  K3_RETURN_IF_ERROR(CheckImageSize("jpeg", header.width, header.height, limits));

  DecodedImage image;
  image.format = "jpeg";
  image.width = header.width;
  image.height = header.height;
  J_COLOR_SPACE out_space = JCS_RGB;
  switch (header.components) {
    case 1:
      image.mode = PixelMode::kL;
      out_space = JCS_GRAYSCALE;
      break;
    case 3:
      image.mode = PixelMode::kRGB;
      out_space = JCS_RGB;
      break;
    case 4:
      image.mode = PixelMode::kCMYK;
      out_space = JCS_CMYK;
      break;
    default:
      return InvalidArgument("jpeg: {} colour components are not supported (1, 3 or 4)", header.components);
  }
  const size_t row_bytes = static_cast<size_t>(image.width) * ChannelCount(image.mode);
  image.pixels.resize(row_bytes * image.height);
  if (!ReadJpegPixels(&h.cinfo, &err, out_space, image.pixels.data(), row_bytes))
    return InvalidArgument("jpeg: {}", err.message);
  if (h.cinfo.output_components != ChannelCount(image.mode))
    return Internal("jpeg: unexpected output components");
  if (image.mode == PixelMode::kCMYK) {
    for (uint8_t& v : image.pixels) v = static_cast<uint8_t>(255 - v);
  }
  return image;
}

}  // namespace k3::image::internal
