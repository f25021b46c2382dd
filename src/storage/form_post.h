// Requests to credential services: a form POST to a token service (AWS STS's AssumeRoleWithWebIdentity,
// Microsoft Entra's and Google's token endpoints; application/x-www-form-urlencoded), and the GETs / PUTs
// of the metadata services (EC2 IMDSv2, ECS / EKS Pod Identity container credentials, Azure IMDS, GCE).
// Through libcurl, retried on transport errors and 5xx. Each caller parses the reply its own way; this file
// sends the request and collects the answer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::storage {

struct FormPostReply {
  long status = 0;
  std::string body;  // at most 1 MiB (a token reply is a few KiB)
};

struct CredentialRequest {
  std::string method = "GET";  // GET | PUT | POST
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent for PUT and POST
  int attempts = 3;
  long connect_timeout_ms = 10'000;
  long timeout_ms = 30'000;  // the whole request
};

// Sends `request` up to request.attempts times, 0.4 s, 0.8 s, ... apart, until an answer below 500, which
// comes back whatever its status; after the last attempt a 5xx comes back too. An error only when the last
// attempt failed in transport.
Result<FormPostReply> SendCredentialRequest(const CredentialRequest& request);

// Posts `form` to `url` (Accept: `accept`) up to `attempts` times, 0.4 s, 0.8 s, ... apart, until an
// answer below 500, which comes back whatever its status; after the last attempt a 5xx comes back too.
// An error only when the last attempt failed in transport (connect, timeout: 10 s to connect, 30 s whole).
Result<FormPostReply> PostForm(const std::string& url, const std::string& form, const std::string& accept,
                               int attempts);

}  // namespace k3::storage
