// libcurl global initialisation and transfer-error messages (curl_transport.h).
#include "src/base/curl_transport.h"

#include <curl/curl.h>

#include <mutex>

namespace k3 {

void EnsureCurlInitialized() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_ALL); });
}

Status TransportError(int code, const std::string& detail, const std::string& url, double elapsed_s) {
  const std::string extra = detail.empty() ? "" : " (" + detail + ")";
  switch (static_cast<CURLcode>(code)) {
    case CURLE_COULDNT_CONNECT:
      return IoError("connection refused: {}{} -- is the server running and listening on that port?", url,
                     extra);
    case CURLE_OPERATION_TIMEDOUT:
      return IoError("timed out after {:.1f} s: {}{}", elapsed_s, url, extra);
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return IoError("cannot resolve host: {}{}", url, extra);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
      return IoError("TLS error: {}{} -- use --insecure only for self-signed test certificates", url, extra);
    case CURLE_GOT_NOTHING:
      return IoError("the server closed the connection without answering: {}{}", url, extra);
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
      return IoError("the connection broke during the transfer: {}{}", url, extra);
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return IoError("not an HTTP server: {}{}", url, extra);
    default:
      return IoError("{}: {}{}", curl_easy_strerror(static_cast<CURLcode>(code)), url, extra);
  }
}

}  // namespace k3
