// How often and how long object-store requests are retried: exponential backoff with full jitter
// (each wait is uniform in [0, min(max_delay, base_delay * 2^attempt)]), a bounded number of attempts.
// Retried: HTTP 500/502/503/504, 429, S3 "SlowDown" / "RequestTimeout" / "InternalError", Azure
// "ServerBusy" / "OperationTimedOut" / "InternalError", and transport failures that a new connection can fix
// (reset, broken transfer, timeout, refused connection).
#pragma once

#include <chrono>
#include <string_view>

namespace k3::storage {

struct RetryPolicy {
  int max_attempts = 8;  // first try included
  std::chrono::milliseconds base_delay{200};
  std::chrono::milliseconds max_delay{10'000};

  // The wait before attempt `attempt` + 1 (attempt counts from 1), with jitter.
  std::chrono::milliseconds Backoff(int attempt) const;
};

// Whether an HTTP reply with this status and S3 or Azure error code is worth another attempt.
bool IsRetryableHttp(long status, std::string_view error_code);
// Whether a failed libcurl transfer (a CURLcode) is worth another attempt.
bool IsRetryableTransport(int curl_code);

}  // namespace k3::storage
