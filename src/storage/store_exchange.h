// One HTTP exchange between an object store client (S3Store, AzureStore, HfStore) and its service over a
// pooled libcurl handle: the attempt both stores make inside their retry loops. Signing, URLs, retries and
// the wording of errors stay with each store; this file moves the bytes.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/storage/retry_policy.h"

namespace k3::storage {

// What the service answered to one attempt.
struct StoreReply {
  long status = 0;
  std::string body;  // the body, unless a 2xx body went into StoreExchange::dst
  std::string etag;  // unquoted
  std::string last_modified;
  std::string error_code;  // x-ms-error-code (Azure; HEAD replies carry the code only there)
  std::string link;        // the Link header (paginated JSON APIs: the Hugging Face Hub)
  uint64_t content_length = 0;
};

// One attempt to send.
struct StoreExchange {
  std::string method = "GET";        // GET, HEAD, PUT, POST, DELETE
  std::string url;                   // complete, encoded
  std::vector<std::string> headers;  // "Name: value"
  std::span<const uint8_t> body;     // PUT and POST bodies
  std::span<uint8_t> dst;            // a ranged read's remaining destination (2xx bodies only)
  std::string curl_range;            // CURLOPT_RANGE ("first-last"), empty when the Range is a header
  // AWS Signature V4 signing by libcurl ("aws:amz:REGION:s3", access key id, secret key), when set.
  struct SigV4 {
    std::string provider;
    std::string access_key_id;
    std::string secret_access_key;
  };
  std::optional<SigV4> sigv4;
  double connect_timeout_s = 10;
  double low_speed_time_s = 30;  // a transfer below 1 KiB/s for this long is dropped
  // Follows up to 5 redirects (http and https only). libcurl sends a custom Authorization header only to
  // the first host and port, never to the host a redirect points at.
  bool follow_redirects = false;
};

struct StoreExchangeOutcome {
  CURLcode code = CURLE_OK;
  std::string curl_error;  // libcurl's message when code is not CURLE_OK
  double seconds = 0;      // the attempt's total time
  size_t dst_written = 0;  // bytes written into StoreExchange::dst
  bool overflow = false;   // the service sent more than dst holds (the attempt was aborted)
  StoreReply reply;
};

// Idle CURL handles of one store; each keeps its connection alive for the next request.
class CurlHandlePool {
 public:
  CurlHandlePool() = default;
  CurlHandlePool(const CurlHandlePool&) = delete;
  CurlHandlePool& operator=(const CurlHandlePool&) = delete;
  ~CurlHandlePool();
  CURL* Acquire();  // from the pool, else new; nullptr when libcurl cannot make one
  void Release(CURL* handle);

 private:
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

// Runs one attempt on a handle from `pool` (returned to it afterwards). An outcome with
// code == CURLE_FAILED_INIT and an empty reply means no handle could be made.
StoreExchangeOutcome RunStoreExchange(CurlHandlePool& pool, const StoreExchange& exchange);

// What a store makes of a non-2xx reply it did not accept.
struct StoreHttpError {
  std::string message;        // "WHAT: HTTP 403 Code: the service's message", one line, no secrets
  bool retryable = false;     // IsRetryableHttp with the store's error code
  std::string endpoint_note;  // ", endpoint URL" (or "") inside the parentheses of the final error
  std::string hint;           // "; check the credentials ..." (or "") after them
};

// One call to a store with retries: RunWithRetries runs prepare(dst_written) attempts until one answers.
struct RetriedCall {
  std::string what;     // the object or bucket URI for messages
  std::string context;  // "credentials: SOURCE", in every error
  // Non-2xx statuses that come back as replies instead of errors (404 for Delete, 416 for reads).
  std::vector<long> accepted;
  // A ranged read straight into caller memory: bytes [*range_offset, *range_offset + dst.size()). An
  // attempt that breaks mid-body is followed by one for the rest only.
  std::optional<uint64_t> range_offset;
  std::span<uint8_t> dst;
  // The attempt's exchange (URL, headers, signature, the Range of the bytes still missing);
  // `dst_written` bytes of dst have arrived. RunWithRetries sets exchange.dst itself.
  std::function<StoreExchange(size_t dst_written)> prepare;
  // The store's reading of an error reply.
  std::function<StoreHttpError(const StoreReply&)> on_http_error;
  // Removes secrets a server or libcurl might echo (Azure's SAS); identity when unset.
  std::function<std::string(std::string)> redact;
};

// Retries throttling, 5xx and broken connections per `policy`. Errors: "MESSAGE (CONTEXT...)..." as
// kNotFound for a 404, IoError otherwise; "... (gave up after N attempts; CONTEXT)" when the attempts run
// out; DataLoss when the server sends more than the range asked for.
Result<StoreReply> RunWithRetries(CurlHandlePool& pool, const RetryPolicy& policy, const RetriedCall& call);

// A service's message as one line of at most 300 characters (whitespace runs kept, newlines and tabs
// turned into spaces, the ends trimmed).
std::string OneLineMessage(std::string_view text);

}  // namespace k3::storage
