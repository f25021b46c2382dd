// Small text helpers shared by the HTTP, credential and storage code: whitespace trimming and a string's
// bytes as a span.
#pragma once

#include <cctype>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace k3 {

// s without leading and trailing whitespace (std::isspace: space, \t, \n, \v, \f, \r).
inline std::string TrimWhitespace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

// The bytes of s (valid while s is unchanged).
inline std::span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace k3
