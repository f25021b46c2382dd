// ParseEndpoint: normalises the --endpoint flag into a base URL.
#include "src/client/endpoint.h"

namespace k3::client {

std::vector<std::string> Endpoint::JsonHeaders() const {
  std::vector<std::string> headers = {"Content-Type: application/json", "Accept: application/json"};
  if (!api_key.empty()) headers.push_back("Authorization: Bearer " + api_key);
  return headers;
}

Result<Endpoint> ParseEndpoint(const std::string& url, const std::string& api_key) {
  const bool http = url.rfind("http://", 0) == 0;
  const bool https = url.rfind("https://", 0) == 0;
  if (!http && !https) {
    return InvalidArgument("endpoint '{}': expected an http:// or https:// URL (e.g. http://localhost:8000)",
                           url);
  }
  std::string base = url;
  const size_t query = base.find_first_of("?#");
  if (query != std::string::npos) base.resize(query);
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) base.resize(base.size() - 3);
  while (!base.empty() && base.back() == '/') base.pop_back();
  const size_t host_start = base.find("://") + 3;
  if (base.size() <= host_start) return InvalidArgument("endpoint '{}': no host", url);
  return Endpoint{base, api_key};
}

}  // namespace k3::client
