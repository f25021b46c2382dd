// DecodeImage: magic-byte sniffing, MIME checks, limits and dispatch to the per-format decoders.
#include "src/image/decode.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "src/image/decoders.h"

namespace k3::image {
namespace {

using std::literals::string_view_literals::operator""sv;

bool StartsWith(std::span<const uint8_t> bytes, std::string_view magic, size_t offset = 0) {
  return bytes.size() >= offset + magic.size() &&
         std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

// Names formats we recognise but do not decode, for the error message; empty when unknown.
std::string_view OtherFormatName(std::span<const uint8_t> bytes) {
  size_t i = 0;
  if (StartsWith(bytes, "\xEF\xBB\xBF"sv)) i = 3;  // UTF-8 byte order mark
  while (i < bytes.size() && i < 4096 && std::isspace(bytes[i])) ++i;
  const std::span<const uint8_t> text = bytes.subspan(i);
  if (StartsWith(text, "<svg"sv) || StartsWith(text, "<?xml"sv) || StartsWith(text, "<!DOCTYPE svg"sv))
    return "an SVG (vector) image";
  if (StartsWith(bytes, "BM"sv)) return "a BMP image";
  if (StartsWith(bytes, "II*\0"sv) || StartsWith(bytes, "MM\0*"sv)) return "a TIFF image";
  if (StartsWith(bytes, "ftypavif"sv, 4) || StartsWith(bytes, "ftypavis"sv, 4)) return "an AVIF image";
  if (StartsWith(bytes, "ftyphei"sv, 4) || StartsWith(bytes, "ftypmif1"sv, 4) ||
      StartsWith(bytes, "ftyphev"sv, 4))
    return "a HEIF image";
  if (StartsWith(bytes, "\x00\x00\x01\x00"sv)) return "an ICO image";
  if (StartsWith(bytes, "%PDF"sv)) return "a PDF document";
  if (StartsWith(text, "<html"sv) || StartsWith(text, "<!DOCTYPE html"sv) || StartsWith(text, "<HTML"sv))
    return "an HTML page";
  return "";
}

std::string LowerMime(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

DecodeLimits DefaultDecodeLimits() { return DecodeLimits{}; }

const char* FormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng:
      return "png";
    case ImageFormat::kJpeg:
      return "jpeg";
    case ImageFormat::kWebp:
      return "webp";
    case ImageFormat::kGif:
      return "gif";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

ImageFormat SniffFormat(std::span<const uint8_t> bytes) {
  if (StartsWith(bytes, "\x89PNG\r\n\x1a\n"sv)) return ImageFormat::kPng;
  if (StartsWith(bytes, "\xFF\xD8\xFF"sv)) return ImageFormat::kJpeg;
  if (StartsWith(bytes, "GIF87a"sv) || StartsWith(bytes, "GIF89a"sv)) return ImageFormat::kGif;
  if (StartsWith(bytes, "RIFF"sv) && StartsWith(bytes, "WEBP"sv, 8)) return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

Status CheckDeclaredMime(std::string_view mime_type, ImageFormat sniffed) {
  std::string mime = LowerMime(mime_type.substr(0, mime_type.find(';')));
  while (!mime.empty() && std::isspace(static_cast<unsigned char>(mime.back()))) mime.pop_back();
  if (mime.empty() || mime == "application/octet-stream") return OkStatus();
  ImageFormat declared = ImageFormat::kUnknown;
  if (mime == "image/png" || mime == "image/apng")
    declared = ImageFormat::kPng;
  else if (mime == "image/jpeg" || mime == "image/jpg" || mime == "image/pjpeg")
    declared = ImageFormat::kJpeg;
  else if (mime == "image/webp")
    declared = ImageFormat::kWebp;
  else if (mime == "image/gif")
    declared = ImageFormat::kGif;
  else if (mime == "image/svg+xml")
    return InvalidArgument("SVG images (image/svg+xml) are not supported; send PNG, JPEG, WebP or GIF");
  else if (mime.starts_with("image/"))
    return InvalidArgument("unsupported image type {}; send PNG, JPEG, WebP or GIF", mime);
  else
    return InvalidArgument("MIME type {} is not an image; send PNG, JPEG, WebP or GIF", mime);
  if (sniffed != ImageFormat::kUnknown && sniffed != declared)
    return InvalidArgument("declared as {} but the bytes are a {} image", mime, FormatName(sniffed));
  return OkStatus();
}

Status CheckImageSize(const char* format, int64_t width, int64_t height, const DecodeLimits& limits) {
  if (width <= 0 || height <= 0)
    return InvalidArgument("{} image has an empty size {}x{}", format, width, height);
  if (width > limits.max_side || height > limits.max_side)
    return InvalidArgument("{} image is {}x{}; the largest side accepted is {} pixels", format, width, height,
                           limits.max_side);
  if (width * height > limits.max_pixels)
    return InvalidArgument("{} image is {}x{} = {} pixels; at most {} pixels are accepted", format, width,
                           height, width * height, limits.max_pixels);
  return OkStatus();
}

Result<DecodedImage> DecodeImage(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes)
    return InvalidArgument("image is {} bytes; at most {} bytes are accepted", bytes.size(),
                           limits.max_bytes);
  if (bytes.empty()) return InvalidArgument("image is empty (0 bytes)");
  switch (SniffFormat(bytes)) {
    case ImageFormat::kPng:
      return internal::DecodePng(bytes, limits);
    case ImageFormat::kJpeg:
      return internal::DecodeJpeg(bytes, limits);
    case ImageFormat::kWebp:
      return internal::DecodeWebp(bytes, limits);
    case ImageFormat::kGif:
      return internal::DecodeGif(bytes, limits);
    case ImageFormat::kUnknown:
      break;
  }
  const std::string_view other = OtherFormatName(bytes);
  if (!other.empty()) return InvalidArgument("{} is not supported; send PNG, JPEG, WebP or GIF", other);
  return InvalidArgument("not a PNG, JPEG, WebP or GIF image (unrecognised leading bytes)");
}

}  // namespace k3::image
