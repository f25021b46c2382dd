// Test-only: a fresh P-256 key and a self-signed certificate for "localhost" / 127.0.0.1, written as PEM
// files (OpenSSL's C API, no openssl CLI), and a process-wide switch that makes the test HTTP client speak
// TLS. A self-signed certificate is its own CA: clients trust it with the certificate file itself.
#pragma once

#include <string>

#include "src/base/status.h"

namespace k3::server::testing {

struct TlsFiles {
  std::string cert;  // PEM certificate
  std::string key;   // PEM private key (unencrypted)
};

// Writes <dir>/<name>.crt and <dir>/<name>.key. Valid for one day from an hour ago.
Result<TlsFiles> WriteSelfSignedCert(const std::string& dir, const std::string& name);

}  // namespace k3::server::testing
