// API-key check for /v1/*: `Authorization: Bearer <key>` compared in constant time.
#pragma once

#include <string_view>

namespace k3::server {

// Equal strings -> true. The time taken depends only on the lengths, not on where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// True when `authorization` is "Bearer <key>" (scheme case-insensitive, spaces after it skipped).
bool BearerMatches(std::string_view authorization, std::string_view key);

}  // namespace k3::server
