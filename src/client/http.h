// HttpClient: blocking HTTP(S) requests over libcurl, one connection kept alive across calls. Used by
// k3 verify and for the /metrics scrapes of k3 bench (the load generator uses load_generator.h).
//
// Transport failures come back as IoError statuses that say what happened in words a user can act on:
// "connection refused: http://127.0.0.1:9/v1/models (is the server running on that port?)",
// "timed out after 5.0 s: ...", "TLS error: ...", "cannot resolve host: ...". An HTTP error status is
// not a transport failure: it comes back as a response with that status.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/curl_transport.h"
#include "src/base/status.h"

namespace k3::client {

struct HttpOptions {
  double timeout_s = 60;  // whole request, connect included
  double connect_timeout_s = 10;
  bool verify_tls = true;  // false: accept self-signed certificates (--insecure)
};

struct HttpResponse {
  long status = 0;
  std::string content_type;  // lower-cased, parameters kept ("text/event-stream; charset=utf-8")
  std::string body;          // empty for streamed requests
  double elapsed_s = 0;      // request start to last byte
};

// Called with each piece of the body as it arrives.
using BodySink = std::function<void(std::string_view)>;

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<HttpResponse> Get(const std::string& url, const std::vector<std::string>& headers = {});
  Result<HttpResponse> Post(const std::string& url, std::string_view body,
                            const std::vector<std::string>& headers);
  // POST whose body is handed to sink as it arrives (SSE); the response's body stays empty.
  Result<HttpResponse> PostStreaming(const std::string& url, std::string_view body,
                                     const std::vector<std::string>& headers, const BodySink& sink);

  const HttpOptions& options() const { return options_; }

 private:
  Result<HttpResponse> Perform(const std::string& url, const std::string* post_body,
                               const std::vector<std::string>& headers, const BodySink* sink);
  HttpOptions options_;
  void* curl_;  // CURL*
};

// Shared with src/storage (src/base/curl_transport.h).
using ::k3::EnsureCurlInitialized;
using ::k3::TransportError;

}  // namespace k3::client
