// OpenSSL server context from PEM files, with start-up errors a user can act on. Never logs or returns
// key material: only file names and OpenSSL's reason strings.
#include "src/server/tls_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace k3::server {
namespace {

// OpenSSL's reasons for the last failure ("no start line", "key values mismatch"), oldest first; clears
// the queue. `mismatch` is set when one of them says the key does not belong to the certificate.
std::string OpenSslReason(bool* mismatch = nullptr) {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    if (mismatch != nullptr && ERR_GET_LIB(e) == ERR_LIB_X509 &&
        ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
      *mismatch = true;
    }
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : fmt::format("error {:#x}", e);
  }
  return out.empty() ? std::string("unknown OpenSSL error") : out;
}

Status CheckReadable(const char* flag, const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return InvalidArgument("{} {}: {}: give the path of {}", flag, path, std::strerror(errno), what);
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgument("{} {}: not a regular file: give {}", flag, path, what);
  if (::access(path.c_str(), R_OK) != 0) {
    return InvalidArgument("{} {}: cannot read it: {} (check the file's permissions)", flag, path,
                           std::strerror(errno));
  }
  return OkStatus();
}

// An encrypted key would make OpenSSL prompt on the terminal for a passphrase: refuse instead.
int NoPassphrase(char*, int, int, void*) { return 0; }

}  // namespace

void SslCtxFree::operator()(ssl_ctx_st* ctx) const { SSL_CTX_free(ctx); }

Result<SslCtxPtr> MakeServerTlsContext(const TlsOptions& o) {
  if (o.certfile.empty()) {
    if (!o.keyfile.empty()) {
      return InvalidArgument("--ssl-keyfile is given without --ssl-certfile: give the certificate (PEM) too");
    }
    return InvalidArgument(
        "--ssl-ca-certs / --ssl-cert-reqs need --ssl-certfile and --ssl-keyfile (TLS off)");
  }
  if (o.cert_reqs < 0 || o.cert_reqs > 2) {
    return InvalidArgument(
        "--ssl-cert-reqs must be 0 (no client certificate), 1 (optional) or 2 (required), "
        "got {}",
        o.cert_reqs);
  }
  if (o.cert_reqs == 2 && o.ca_certs.empty()) {
    return InvalidArgument(
        "--ssl-cert-reqs 2 requires client certificates but --ssl-ca-certs is not given: give the CA bundle "
        "(PEM) that signs them");
  }
  K3_RETURN_IF_ERROR(CheckReadable("--ssl-certfile", o.certfile, "a PEM certificate"));
  if (!o.keyfile.empty()) K3_RETURN_IF_ERROR(CheckReadable("--ssl-keyfile", o.keyfile, "a PEM private key"));
  if (!o.ca_certs.empty()) K3_RETURN_IF_ERROR(CheckReadable("--ssl-ca-certs", o.ca_certs, "a PEM CA bundle"));

  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return Internal("TLS: cannot create a context: {}", OpenSslReason());
  SSL_CTX* c = ctx.get();
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  SSL_CTX_set_options(c, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_default_passwd_cb(c, NoPassphrase);
  if (SSL_CTX_use_certificate_chain_file(c, o.certfile.c_str()) != 1) {
    return InvalidArgument(
        "--ssl-certfile {}: cannot load a certificate from it ({}): give a PEM file that starts with "
        "-----BEGIN CERTIFICATE-----",
        o.certfile, OpenSslReason());
  }
  const std::string& keyfile = o.keyfile.empty() ? o.certfile : o.keyfile;
  if (SSL_CTX_use_PrivateKey_file(c, keyfile.c_str(), SSL_FILETYPE_PEM) != 1) {
    bool mismatch = false;
    const std::string reason = OpenSslReason(&mismatch);
    if (mismatch) {
      return InvalidArgument(
          "--ssl-keyfile {} does not match the certificate in --ssl-certfile {} ({}): give the key the "
          "certificate was issued for",
          keyfile, o.certfile, reason);
    }
    if (o.keyfile.empty()) {
      return InvalidArgument("--ssl-certfile {} holds no private key ({}): give it with --ssl-keyfile",
                             keyfile, reason);
    }
    return InvalidArgument(
        "--ssl-keyfile {}: cannot load a private key from it ({}): give an unencrypted PEM private key "
        "(passphrase-protected keys are not supported)",
        keyfile, reason);
  }
  if (SSL_CTX_check_private_key(c) != 1) {
    return InvalidArgument(
        "--ssl-keyfile {} does not match the certificate in --ssl-certfile {} ({}): give the key the "
        "certificate was issued for",
        keyfile, o.certfile, OpenSslReason());
  }
  if (!o.ca_certs.empty()) {
    if (SSL_CTX_load_verify_locations(c, o.ca_certs.c_str(), nullptr) != 1) {
      return InvalidArgument(
          "--ssl-ca-certs {}: cannot load CA certificates from it ({}): give a PEM bundle of CA certificates",
          o.ca_certs, OpenSslReason());
    }
    // Tells clients which CAs their certificate may come from.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.ca_certs.c_str())) {
      SSL_CTX_set_client_CA_list(c, names);
    }
  }
  if (o.cert_reqs > 0) {
    SSL_CTX_set_verify(
        c, o.cert_reqs == 2 ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER, nullptr);
    static const unsigned char kSessionContext[] = "k3";
    SSL_CTX_set_session_id_context(c, kSessionContext, sizeof(kSessionContext) - 1);
  }
  ERR_clear_error();
  return ctx;
}

}  // namespace k3::server
