// SHA-256 over OpenSSL's EVP interface (libssl-dev): request payload hashes for AWS Signature V4, the
// per-file checksums of the weights manifest and the content keys of images (src/api).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace k3 {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::span<const uint8_t> data);
  void Update(std::string_view data);
  // 64 lower-case hex digits. The object cannot be updated afterwards.
  std::string FinishHex();

 private:
  void* ctx_;  // EVP_MD_CTX*
};

std::string Sha256Hex(std::string_view data);

}  // namespace k3
