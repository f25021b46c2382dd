// Endpoint: the base URL of an OpenAI-compatible server plus its API key, and the request headers and
// URLs derived from them. "http://host:8000", "http://host:8000/" and "http://host:8000/v1" all name
// the same server; paths are always given from the root ("/v1/models", "/health", "/metrics").
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"

namespace k3::client {

struct Endpoint {
  std::string base;     // scheme://host[:port][/prefix], no trailing slash, no trailing /v1
  std::string api_key;  // empty: no Authorization header

  std::string Url(const std::string& path) const { return base + path; }
  // Content-Type: application/json, Accept, and Authorization: Bearer when a key is set.
  std::vector<std::string> JsonHeaders() const;
};

// Accepts http:// and https:// URLs only; anything else is an InvalidArgument naming the URL.
Result<Endpoint> ParseEndpoint(const std::string& url, const std::string& api_key);

}  // namespace k3::client
