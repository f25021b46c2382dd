// ParseDataUrl: RFC 2397 data URLs with a base64 or percent-encoded payload.
#include "src/image/data_url.h"

#include <algorithm>
#include <cctype>

#include "src/base/base64.h"

namespace k3::image {
namespace {

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<DataUrl> ParseDataUrl(std::string_view url) {
  url = Trim(url);
  if (url.size() < 5 || LowerAscii(url.substr(0, 5)) != "data:") {
    const size_t colon = url.find(':');
    if (colon != std::string_view::npos && colon < 16) {
      return InvalidArgument("expected a data: URL (data:image/png;base64,...), got a {}: URL",
                             LowerAscii(url.substr(0, colon)));
    }
    return InvalidArgument("expected a data: URL (data:image/png;base64,...)");
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return InvalidArgument("data URL has no ',' before its payload");
  const std::string_view header = url.substr(5, comma - 5);
  const std::string_view payload = url.substr(comma + 1);

  DataUrl out;
  bool base64 = false;
  size_t start = 0;
  bool first = true;
  while (start <= header.size()) {
    const size_t semi = header.find(';', start);
    const std::string_view part =
        Trim(header.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start));
    if (first) {
      out.mime_type = LowerAscii(part);
      first = false;
    } else if (LowerAscii(part) == "base64") {
      if (semi != std::string_view::npos)
        return InvalidArgument("data URL: ';base64' must come last, before ','");
      base64 = true;
    } else if (!part.empty() && part.find('=') == std::string_view::npos) {
      return InvalidArgument("data URL: malformed parameter '{}'", part.substr(0, 64));
    }
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  if (!out.mime_type.empty() && out.mime_type.find('/') == std::string::npos)
    return InvalidArgument("data URL: '{}' is not a MIME type", out.mime_type.substr(0, 64));

  if (base64) {
    std::string compact;
    compact.reserve(payload.size());
    for (char c : payload) {
      if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
    }
    auto decoded = Base64Decode(compact);
    if (!decoded.ok())
      return InvalidArgument("data URL: bad base64 payload ({})", decoded.status().message());
    out.bytes = std::move(*decoded);
    return out;
  }
  out.bytes.reserve(payload.size());
  for (size_t i = 0; i < payload.size(); ++i) {
    if (payload[i] != '%') {
      out.bytes += payload[i];
      continue;
    }
    const int hi = i + 2 < payload.size() ? HexValue(payload[i + 1]) : -1;
    const int lo = i + 2 < payload.size() ? HexValue(payload[i + 2]) : -1;
    if (hi < 0 || lo < 0) return InvalidArgument("data URL: bad percent escape at offset {}", i);
    out.bytes += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace k3::image
