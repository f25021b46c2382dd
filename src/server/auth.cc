// Constant-time bearer-token comparison.
#include "src/server/auth.h"

#include <cstddef>
#include <cstdint>

namespace k3::server {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Walk the expected length whatever `a` is, so a mismatch position leaks nothing.
  const size_t n = b.size();
  uint32_t diff = static_cast<uint32_t>(a.size() ^ b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= static_cast<uint32_t>(x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

bool BearerMatches(std::string_view authorization, std::string_view key) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() < kScheme.size() + 1) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = authorization[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return false;
  }
  std::string_view rest = authorization.substr(kScheme.size());
  if (rest.front() != ' ') return false;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  return ConstantTimeEquals(rest, key);
}

}  // namespace k3::server
