// TLS for the HTTP server, as vLLM's --ssl-certfile / --ssl-keyfile / --ssl-ca-certs / --ssl-cert-reqs:
// builds the OpenSSL server context from PEM files and turns every problem (a missing or unreadable file,
// a file that is not PEM, an encrypted key, a key that does not match the certificate) into a start-up
// error that names the flag, the file and the fix. OpenSSL only (no Asio here): quick to compile, tested
// on its own. The header names no OpenSSL type beyond a forward declaration.
#pragma once

#include <memory>
#include <string>

#include "src/base/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace k3::server {

struct TlsOptions {
  std::string certfile;  // PEM certificate (chain); non-empty turns TLS on
  std::string keyfile;   // PEM private key, unencrypted; empty: the key is in certfile
  std::string ca_certs;  // PEM CA bundle that client certificates are checked against
  int cert_reqs = 0;     // client certificates: 0 not asked for, 1 optional (checked if sent), 2 required

  bool enabled() const {
    return !certfile.empty() || !keyfile.empty() || !ca_certs.empty() || cert_reqs != 0;
  }
};

struct SslCtxFree {
  void operator()(ssl_ctx_st* ctx) const;
};
using SslCtxPtr = std::unique_ptr<ssl_ctx_st, SslCtxFree>;

// A server context (TLS 1.2 and newer) holding the certificate and key, or the start-up error.
Result<SslCtxPtr> MakeServerTlsContext(const TlsOptions& options);

}  // namespace k3::server
