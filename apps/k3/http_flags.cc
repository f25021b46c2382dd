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
  const std::string cors = "CORS (vLLM's flags; lists as JSON, e.g. '[\"https://a.example\"]', or a,b)";
  cmd->add_option("--allowed-origins", f->allowed_origins, "origins browsers may call from")
      ->capture_default_str()
      ->group(cors);
  cmd->add_option("--allowed-methods", f->allowed_methods, "methods a preflight may ask for")
      ->capture_default_str()
      ->group(cors);
  cmd->add_option("--allowed-headers", f->allowed_headers, "request headers a preflight may ask for")
      ->capture_default_str()
      ->group(cors);
  cmd->add_flag("--allow-credentials", f->allow_credentials,
                "allow cookies / credentials (the origin is echoed instead of *)")
      ->group(cors);
}

Status ApplyHttpFlags(const HttpFlags& f, server::ServerOptions* options) {
  if (f.ssl_cert_reqs < 0 || f.ssl_cert_reqs > 2) {
    return InvalidArgument("--ssl-cert-reqs {}: 0 (none), 1 (optional) or 2 (required)", f.ssl_cert_reqs);
  }
  options->tls.certfile = f.ssl_certfile;
  options->tls.keyfile = f.ssl_keyfile;
  options->tls.ca_certs = f.ssl_ca_certs;
  options->tls.cert_reqs = f.ssl_cert_reqs;
  K3_ASSIGN_OR_RETURN(options->cors.allowed_origins,
                      server::ParseCorsList("--allowed-origins", f.allowed_origins));
  K3_ASSIGN_OR_RETURN(options->cors.allowed_methods,
                      server::ParseCorsList("--allowed-methods", f.allowed_methods));
  K3_ASSIGN_OR_RETURN(options->cors.allowed_headers,
                      server::ParseCorsList("--allowed-headers", f.allowed_headers));
  options->cors.allow_credentials = f.allow_credentials;
  return OkStatus();
}

}  // namespace k3::app
