// Request ids: echo a sane client value, else 128 random bits in hex.
#include "src/server/request_id.h"

#include <cstdint>
#include <random>

namespace k3::server {

std::string GenerateRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  uint64_t bits[2] = {rng(), rng()};
  for (int i = 0; i < 32; ++i) id[i] = kHex[(bits[i / 16] >> (4 * (i % 16))) & 15];
  return id;
}

std::string RequestIdFor(std::string_view sent) {
  if (sent.empty()) return GenerateRequestId();
  for (char c : sent) {
    if (c < 0x21 || c > 0x7e) return GenerateRequestId();
  }
  // A long id is echoed capped (its first 128 bytes) rather than replaced, so a client can still match it.
  return std::string(sent.substr(0, kMaxRequestIdBytes));
}

}  // namespace k3::server
