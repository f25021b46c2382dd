// The HTTP request and response types the server hands to route handlers. Header names are lower-case.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace k3::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // "/v1/models?x=1"
  std::string path;    // "/v1/models"
  HeaderList headers;  // names lower-cased, values as sent
  std::string body;
  std::string request_id;                          // X-Request-Id as sent (sanitised) or generated
  std::chrono::steady_clock::time_point received;  // when the header was complete

  // The first value of a header (name in lower case), or empty.
  std::string_view Header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HeaderList headers;  // extra headers, e.g. {"Retry-After", "1"}
};

}  // namespace k3::server
