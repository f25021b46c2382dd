// Self-signed test certificates through OpenSSL's C API.
#include "src/server/testing/tls_files.h"

#include <cstdio>
#include <memory>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace k3::server::testing {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(FILE* f) const { std::fclose(f); }
};

Status AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) return Internal("X509 extension {}", value);
  return OkStatus();
}

}  // namespace

Result<TlsFiles> WriteSelfSignedCert(const std::string& dir, const std::string& name) {
  std::unique_ptr<EVP_PKEY, Free> key(EVP_EC_gen("P-256"));
  if (!key) return Internal("EVP_EC_gen failed");
  std::unique_ptr<X509, Free> cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"),
                             -1, -1, 0);
  X509_set_issuer_name(cert.get(), subject);
  K3_RETURN_IF_ERROR(AddExtension(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"));
  K3_RETURN_IF_ERROR(AddExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return Internal("X509_sign failed");

  TlsFiles files{dir + "/" + name + ".crt", dir + "/" + name + ".key"};
  std::unique_ptr<FILE, Free> cf(std::fopen(files.cert.c_str(), "w"));
  std::unique_ptr<FILE, Free> kf(std::fopen(files.key.c_str(), "w"));
  if (!cf || !kf) return IoError("cannot write {} / {}", files.cert, files.key);
  if (PEM_write_X509(cf.get(), cert.get()) != 1 ||
      PEM_write_PrivateKey(kf.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return IoError("PEM write failed in {}", dir);
  }
  return files;
}

}  // namespace k3::server::testing
