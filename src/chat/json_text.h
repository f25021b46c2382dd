// JSON text in the two styles the K3 chat format uses: Python json.dumps defaults (", " and ": "
// separators, non-ASCII kept raw) for typed tool-call argument values, and compact with recursively
// sorted keys (json.dumps(separators=(",", ":"), sort_keys=True, ensure_ascii=False)) for tool
// declarations. Both keep non-ASCII text as UTF-8. Also the JSON Pointer escape of one reference token.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace k3::chat {

// Python json.dumps(value, ensure_ascii=False): object keys in the order given.
std::string DumpPythonStyle(const nlohmann::ordered_json& value);

// Compact, keys sorted recursively (by code point, which is UTF-8 byte order).
std::string DumpCompactSorted(const nlohmann::json& value);

// Escapes an XTML attribute value: & -> &amp; then " -> &quot;.
std::string EscapeAttribute(std::string_view value);
// The reverse: &quot; -> " then &amp; -> &.
std::string UnescapeAttribute(std::string_view value);

// One reference token of a JSON Pointer (RFC 6901): ~ -> ~0, / -> ~1 ("a/b" -> "a~1b").
std::string JsonPointerToken(std::string_view key);

}  // namespace k3::chat
