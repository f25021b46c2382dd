// Router: exact-path dispatch with 404 / 405 answers; HEAD runs a path's GET handler (the server sends
// its answer without the body).
#include "src/server/router.h"

#include <fmt/format.h>

#include "src/server/error_json.h"

namespace k3::server {

void Router::Add(std::string method, std::string path, Handler handler) {
  routes_[std::move(path)].emplace_back(std::move(method), std::move(handler));
}

void Router::Dispatch(const std::shared_ptr<Exchange>& exchange) const {
  const HttpRequest& request = exchange->request();
  auto it = routes_.find(request.path);
  if (it == routes_.end()) {
    exchange->Respond(ErrorResponse(404, fmt::format("no route for {} {}", request.method, request.path)));
    return;
  }
  std::string allowed;
  for (const auto& [method, handler] : it->second) {
    if (method == request.method || (request.method == "HEAD" && method == "GET")) {
      handler(exchange);
      return;
    }
    allowed += allowed.empty() ? method : ", " + method;
  }
  HttpResponse response = ErrorResponse(405, fmt::format("method {} is not allowed on {} (allowed: {})",
                                                         request.method, request.path, allowed));
  response.headers.emplace_back("Allow", allowed);
  exchange->Respond(std::move(response));
}

}  // namespace k3::server
