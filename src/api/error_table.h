// The one table of error kinds every route answers with: HTTP status -> the OpenAI error `type` (the
// body {"error": {"message", "type", "param", "code"}}) and the Anthropic error `type` (/v1/messages:
// {"type": "error", "error": {"type", "message"}}). The OpenAI names are snake_case like the rest of the
// API's (vLLM's own class names, BadRequestError / NotFoundError / InternalServerError /
// ServiceUnavailableError, written as OpenAI writes types); the Anthropic names are Anthropic's.
// Header-only, so the HTTP layer (src/server, built without k3_api too) reads the same table.
//
//   status  OpenAI type                 Anthropic type         when
//   400     invalid_request_error       invalid_request_error  a bad request (fields, JSON, HTTP)
//   401     authentication_error        authentication_error   --api-key set, key missing or wrong
//   403     permission_error            permission_error
//   404     not_found_error             not_found_error        unknown route or model
//   405     invalid_request_error       invalid_request_error  route exists, method does not
//   413     invalid_request_error       request_too_large      body over the limit
//   429     rate_limit_error            rate_limit_error       the waiting queue is full
//   500     internal_server_error       api_error              a bug in k3stack, or the engine failed
//   503     service_unavailable_error   overloaded_error       loading, shutting down, sleeping, a lost rank
// Any other 4xx is treated as 400, any other 5xx as 500.
#pragma once

#include <array>
#include <string_view>

namespace k3::api {

struct ErrorKind {
  int http_status;
  std::string_view openai_type;
  std::string_view anthropic_type;
};

inline constexpr std::array<ErrorKind, 9> kErrorTable = {{
    {400, "invalid_request_error", "invalid_request_error"},
    {401, "authentication_error", "authentication_error"},
    {403, "permission_error", "permission_error"},
    {404, "not_found_error", "not_found_error"},
    {405, "invalid_request_error", "invalid_request_error"},
    {413, "invalid_request_error", "request_too_large"},
    {429, "rate_limit_error", "rate_limit_error"},
    {500, "internal_server_error", "api_error"},
    {503, "service_unavailable_error", "overloaded_error"},
}};

// The row of `http_status`; statuses without a row fall back to 400's (4xx) or 500's (anything else).
constexpr const ErrorKind& ErrorKindFor(int http_status) {
  for (const ErrorKind& kind : kErrorTable) {
    if (kind.http_status == http_status) return kind;
  }
  return http_status >= 400 && http_status < 500 ? kErrorTable[0] : kErrorTable[7];
}

}  // namespace k3::api
