// X-Request-Id: the client's value when it is a sane token (printable ASCII, at most 128 bytes), else a
// generated 32-hex-digit random id.
#pragma once

#include <string>
#include <string_view>

namespace k3::server {

std::string GenerateRequestId();
std::string RequestIdFor(std::string_view sent);

}  // namespace k3::server
