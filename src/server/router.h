// Router: maps (method, exact path) to a handler. Unknown paths get 404 and known paths with another
// method 405, both as OpenAI-shaped error JSON. The query string is not part of the match.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/server/exchange.h"

namespace k3::server {

class Router {
 public:
  void Add(std::string method, std::string path, Handler handler);
  // Runs the matching handler, or answers 404 / 405 itself.
  void Dispatch(const std::shared_ptr<Exchange>& exchange) const;

 private:
  std::map<std::string, std::vector<std::pair<std::string, Handler>>, std::less<>> routes_;
};

}  // namespace k3::server
