// X-Request-Id: the client's value when it is a sane token (printable ASCII; longer than 128 bytes it is
// echoed capped to its first 128), else a generated 32-hex-digit random id.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace k3::server {

inline constexpr size_t kMaxRequestIdBytes = 128;

std::string GenerateRequestId();
std::string RequestIdFor(std::string_view sent);

}  // namespace k3::server
