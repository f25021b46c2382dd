// RFC 3986 percent-encoding, the one used for every object-store URL and form body: S3 / GCS / OSS keys
// and query strings (what SigV4 signs), Azure Blob paths and queries, Hub paths, and the
// application/x-www-form-urlencoded bodies of token requests. Unreserved characters (A-Z a-z 0-9 - _ . ~)
// stay, everything else becomes %XX with upper-case hex.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace k3::storage {

// "a b/c" -> "a%20b%2Fc", or "a%20b/c" with keep_slash (a key's path separators).
std::string PercentEncode(std::string_view text, bool keep_slash);

// "a%20b" -> "a b" (either hex case); nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> PercentDecode(std::string_view text);

}  // namespace k3::storage
