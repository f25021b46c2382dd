// `k3 serve`'s HTTP-layer flags (http_flags.h).
#include "apps/k3/http_flags.h"

namespace k3::app {

void AddHttpFlags(CLI::App* cmd, HttpFlags* f) {
  const std::string tls = "TLS (vLLM's --ssl-* flags; with a certificate the server speaks HTTPS only)";
  cmd->add_option("--ssl-certfile", f->ssl_certfile, "PEM certificate (chain) of the server")->group(tls);
  cmd->add_option("--ssl-keyfile", f->ssl_keyfile,
                  "PEM private key of the certificate, unencrypted (default: read from --ssl-certfile)")
      ->group(tls);
  cmd->add_option("--ssl-ca-certs", f->ssl_ca_certs, "PEM CA bundle that client certificates must chain to")
      ->group(tls);
  cmd->add_option("--ssl-cert-reqs", f->ssl_cert_reqs,
                  "client certificates: 0 not asked for, 1 optional (checked if sent), 2 required")
      ->capture_default_str()
      ->group(tls);
}

Status ApplyHttpFlags(const HttpFlags& f, server::ServerOptions* options) {
  if (f.ssl_cert_reqs < 0 || f.ssl_cert_reqs > 2) {
    return InvalidArgument("--ssl-cert-reqs {}: 0 (none), 1 (optional) or 2 (required)", f.ssl_cert_reqs);
  }
  options->tls.certfile = f.ssl_certfile;
  options->tls.keyfile = f.ssl_keyfile;
  options->tls.ca_certs = f.ssl_ca_certs;
  options->tls.cert_reqs = f.ssl_cert_reqs;
  return OkStatus();
}

}  // namespace k3::app
