// CORS as vLLM's server does it (FastAPI's CORSMiddleware, flags --allowed-origins, --allowed-methods,
// --allowed-headers, --allow-credentials). Pure logic, no sockets: the server asks it for the answer to a
// preflight and for the headers of every other response.
//
//   * A preflight (OPTIONS with Origin and Access-Control-Request-Method, on any path, no auth needed) is
//     answered here: 200 "OK" with Access-Control-Allow-Methods / -Headers / -Max-Age 600, or 400
//     "Disallowed CORS origin, method, headers" (the parts that failed) as Starlette does.
//   * Any other request with an allowed Origin gets Access-Control-Allow-Origin: "*" when every origin is
//     allowed and credentials are off, else the origin itself with Vary: Origin (and
//     Access-Control-Allow-Credentials: true with --allow-credentials). Event streams included.
//   * A request without Origin, or from an origin not allowed, gets no CORS header.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/server/http_types.h"

namespace k3::server {

struct CorsOptions {
  std::vector<std::string> allowed_origins{"*"};
  std::vector<std::string> allowed_methods{"*"};
  std::vector<std::string> allowed_headers{"*"};
  bool allow_credentials = false;
};

// A flag's list: vLLM's JSON form ('["https://a.example", "https://b.example"]') or a plain comma list
// ("https://a.example,https://b.example"). Errors name the flag and show the expected form.
Result<std::vector<std::string>> ParseCorsList(std::string_view flag, std::string_view value);

class CorsPolicy {
 public:
  explicit CorsPolicy(CorsOptions options = {});

  // The complete answer when `request` is a preflight; nullopt otherwise.
  std::optional<HttpResponse> Preflight(const HttpRequest& request) const;
  // Headers for the response to any other request (empty: no Origin, or an origin not allowed).
  HeaderList ResponseHeaders(const HttpRequest& request) const;

 private:
  bool OriginAllowed(std::string_view origin) const;

  CorsOptions options_;
  bool all_origins_ = false;
  bool all_headers_ = false;
  std::vector<std::string> methods_;        // "*" expanded
  std::vector<std::string> headers_;        // safelisted + allowed, as written
  std::vector<std::string> headers_lower_;  // the same, lower case
};

}  // namespace k3::server
