// SendCredentialRequest and PostForm (form_post.h).
#include "src/storage/form_post.h"

#include <curl/curl.h>

#include <chrono>
#include <thread>

#include "src/base/curl_transport.h"

namespace k3::storage {
namespace {

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() + size * count > (size_t{1} << 20)) return 0;  // aborts the transfer
  body->append(data, size * count);
  return size * count;
}

}  // namespace

Result<FormPostReply> SendCredentialRequest(const CredentialRequest& request) {
  EnsureCurlInitialized();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Internal("curl_easy_init failed");
  Status last;
  for (int attempt = 1; attempt <= request.attempts; ++attempt) {
    FormPostReply reply;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_reset(curl);
    curl_slist* headers = nullptr;
    for (const std::string& header : request.headers) headers = curl_slist_append(headers, header.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    if (request.method != "GET") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, request.connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, request.timeout_ms);
    const auto t0 = std::chrono::steady_clock::now();
    const CURLcode code = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
    if (code == CURLE_OK && (reply.status < 500 || attempt == request.attempts)) {
      curl_easy_cleanup(curl);
      return reply;
    }
    if (code != CURLE_OK) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      last = TransportError(code, errbuf, request.url, elapsed);
    }
    if (attempt < request.attempts) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
  }
  curl_easy_cleanup(curl);
  return last;
}

Result<FormPostReply> PostForm(const std::string& url, const std::string& form, const std::string& accept,
                               int attempts) {
  CredentialRequest request;
  request.method = "POST";
  request.url = url;
  request.headers = {"Accept: " + accept};
  request.body = form;
  request.attempts = attempts;
  return SendCredentialRequest(request);
}

}  // namespace k3::storage
