// A form POST to a token service (AWS STS's AssumeRoleWithWebIdentity, Microsoft Entra's token endpoint,
// Google's OAuth token endpoint): application/x-www-form-urlencoded through libcurl, retried on transport
// errors and 5xx; and the GET of an instance metadata server (GCE), retried the same way. Each caller
// parses the reply its own way; this file sends the request and collects the answer.
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

// RFC 3986 percent-encoding of one form value (unreserved characters kept).
std::string FormEncode(std::string_view value);

// Posts `form` to `url` (Accept: `accept`) up to `attempts` times, 0.4 s, 0.8 s, ... apart, until an
// answer below 500, which comes back whatever its status; after the last attempt a 5xx comes back too.
// An error only when the last attempt failed in transport (connect, timeout: 10 s to connect, 30 s whole).
Result<FormPostReply> PostForm(const std::string& url, const std::string& form, const std::string& accept,
                               int attempts);

// GET `url` with these extra headers ("Name: value"), retried like PostForm; `connect_timeout_ms` bounds
// each connect (a metadata server that is not there should fail fast).
Result<FormPostReply> GetWithRetries(const std::string& url, const std::vector<std::string>& headers,
                                     int attempts, long connect_timeout_ms);

}  // namespace k3::storage
