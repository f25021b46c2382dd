// The HTTP-layer flags of `k3 serve`, named as vLLM's: TLS (--ssl-keyfile, --ssl-certfile, --ssl-ca-certs,
// --ssl-cert-reqs) and CORS (--allowed-origins, --allowed-methods, --allowed-headers: JSON lists as vLLM
// parses them, or comma lists; --allow-credentials). Registered in one block and applied to the server's
// options in one call, so cmd_serve.cc only hands them through.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "src/base/status.h"
#include "src/server/http_server.h"

namespace k3::app {

struct HttpFlags {
  std::string ssl_keyfile;
  std::string ssl_certfile;
  std::string ssl_ca_certs;
  int ssl_cert_reqs = 0;
  std::string allowed_origins = R"(["*"])";
  std::string allowed_methods = R"(["*"])";
  std::string allowed_headers = R"(["*"])";
  bool allow_credentials = false;
};

void AddHttpFlags(CLI::App* cmd, HttpFlags* flags);

// Copies the flags into `options`. Errors are usage errors naming the flag. (The files themselves are
// checked when the server starts: HttpServer::Start names the file and the fix.)
Status ApplyHttpFlags(const HttpFlags& flags, server::ServerOptions* options);

}  // namespace k3::app
