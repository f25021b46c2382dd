// Sha256 over EVP_Digest* (sha256.h).
#include "src/base/sha256.h"

#include <openssl/evp.h>

#include "src/base/check.h"

namespace k3 {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  K3_CHECK(ctx_ != nullptr);
  K3_CHECK(EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::Update(std::span<const uint8_t> data) {
  K3_CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size()) == 1);
}

void Sha256::Update(std::string_view data) {
  K3_CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size()) == 1);
}

std::string Sha256::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  K3_CHECK(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &length) == 1);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.FinishHex();
}

}  // namespace k3
