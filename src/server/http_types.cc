// HttpRequest header lookup.
#include "src/server/http_types.h"

namespace k3::server {

std::string_view HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return {};
}

}  // namespace k3::server
