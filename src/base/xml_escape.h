// XmlEscape: text made safe for XML 1.0 element content or a quoted attribute value. Shared by the S3
// multipart request bodies (src/storage) and the JUnit report of `k3 verify` (src/client).
#pragma once

#include <string>
#include <string_view>

namespace k3 {

// Markup characters (& < > " ') become entities, control characters XML 1.0 forbids (all below 0x20 but
// tab and newline) become spaces, and bytes that are not UTF-8 become U+FFFD.
std::string XmlEscape(std::string_view text);

}  // namespace k3
