// RetryPolicy (retry_policy.h).
#include "src/storage/retry_policy.h"

#include <curl/curl.h>

#include <algorithm>
#include <random>

namespace k3::storage {

std::chrono::milliseconds RetryPolicy::Backoff(int attempt) const {
  const int shift = std::clamp(attempt - 1, 0, 30);
  const double cap = std::min(static_cast<double>(max_delay.count()),
                              static_cast<double>(base_delay.count()) * static_cast<double>(1ull << shift));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.0, std::max(cap, 0.0));
  return std::chrono::milliseconds(static_cast<int64_t>(jitter(rng)));
}

bool IsRetryableHttp(long status, std::string_view error_code) {
  if (status == 429 || status == 500 || status == 502 || status == 503 || status == 504) return true;
  return error_code == "SlowDown" || error_code == "RequestTimeout" || error_code == "InternalError" ||
         error_code == "ServiceUnavailable" || error_code == "ServerBusy" ||
         error_code == "OperationTimedOut";
}

bool IsRetryableTransport(int curl_code) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace k3::storage
