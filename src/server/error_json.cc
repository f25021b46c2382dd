// OpenAI-shaped error bodies for the HTTP layer's own answers.
#include "src/server/error_json.h"

#include <nlohmann/json.hpp>

namespace k3::server {

const char* ErrorTypeForStatus(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return "service_unavailable_error";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string ErrorJson(int status, std::string_view message, std::string_view code) {
  nlohmann::json error = {{"message", message},
                          {"type", ErrorTypeForStatus(status)},
                          {"param", nullptr},
                          {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  // Replace invalid UTF-8 (e.g. echoed from a path) instead of throwing.
  return nlohmann::json{{"error", error}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpResponse ErrorResponse(int status, std::string_view message, std::string_view code) {
  HttpResponse response;
  response.status = status;
  response.body = ErrorJson(status, message, code);
  return response;
}

std::string AnthropicErrorJson(int status, std::string_view message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 404 ? "not_found_error"
                     : status >= 500 ? "api_error"
                                     : "invalid_request_error";
  nlohmann::json body = {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace k3::server
