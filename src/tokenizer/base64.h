// Standard base64 (RFC 4648, with padding), as used by tiktoken.model lines.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace k3::tokenizer {

std::string Base64Encode(std::string_view bytes);
// Rejects characters outside the alphabet, bad lengths and misplaced padding.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace k3::tokenizer
