// RFC 2397 data URLs, as OpenAI-style image_url parts carry uploads:
// data:[<mime>][;param=v]*[;base64],<payload>.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace k3::image {

struct DataUrl {
  std::string mime_type;  // lower-cased, parameters dropped; empty when the URL names none
  std::string bytes;      // the decoded payload
};

// InvalidArgument for anything that is not a data: URL (http(s) URLs included: fetching is the
// caller's business), a missing comma, bad base64 (standard alphabet, padding required; ASCII
// whitespace is ignored) or a bad percent escape in a non-base64 payload.
Result<DataUrl> ParseDataUrl(std::string_view url);

}  // namespace k3::image
