// OpenAI- and Anthropic-shaped error bodies for the HTTP layer's own answers; the types come from
// src/api/error_table.h, as the API layer's do.
#include "src/server/error_json.h"

#include <nlohmann/json.hpp>

#include "src/api/error_table.h"

namespace k3::server {

const char* ErrorTypeForStatus(int status) { return api::ErrorKindFor(status).openai_type.data(); }

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
  nlohmann::json body = {
      {"type", "error"},
      {"error", {{"type", std::string(api::ErrorKindFor(status).anthropic_type)}, {"message", message}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace k3::server
