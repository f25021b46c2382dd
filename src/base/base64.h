// Standard base64 (RFC 4648, with padding): tiktoken.model lines, base64 embeddings, image data URLs.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace k3 {

std::string Base64Encode(std::string_view bytes);
// Rejects characters outside the alphabet, bad lengths and misplaced padding. Messages name the offset,
// never echo the text (it may be a multi-megabyte image).
Result<std::string> Base64Decode(std::string_view text);

}  // namespace k3
