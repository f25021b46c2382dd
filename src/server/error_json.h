// OpenAI-shaped error bodies for the errors the HTTP layer itself answers (404, 405, 401, 413, 400 for
// malformed HTTP, 500): {"error": {"message", "type", "param": null, "code"}}.
#pragma once

#include <string>
#include <string_view>

#include "src/server/http_types.h"

namespace k3::server {

// The OpenAI error type for an HTTP status (api::ErrorKindFor: "invalid_request_error", ...).
const char* ErrorTypeForStatus(int status);
std::string ErrorJson(int status, std::string_view message, std::string_view code = {});
HttpResponse ErrorResponse(int status, std::string_view message, std::string_view code = {});
// Anthropic's shape, for the /v1/messages routes: {"type": "error", "error": {"type", "message"}}.
std::string AnthropicErrorJson(int status, std::string_view message);

}  // namespace k3::server
