// HttpClient over the libcurl easy interface.
#include "src/client/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

namespace k3::client {
namespace {

struct Transfer {
  std::string* body = nullptr;
  const BodySink* sink = nullptr;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string_view piece(data, size * count);
  if (transfer->sink != nullptr) {
    (*transfer->sink)(piece);
  } else {
    transfer->body->append(piece);
  }
  return piece.size();
}

struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
};

}  // namespace

HttpClient::HttpClient(HttpOptions options) : options_(options) {
  EnsureCurlInitialized();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Result<HttpResponse> HttpClient::Get(const std::string& url, const std::vector<std::string>& headers) {
  return Perform(url, nullptr, headers, nullptr);
}

Result<HttpResponse> HttpClient::Post(const std::string& url, std::string_view body,
                                      const std::vector<std::string>& headers) {
  const std::string copy(body);
  return Perform(url, &copy, headers, nullptr);
}

Result<HttpResponse> HttpClient::PostStreaming(const std::string& url, std::string_view body,
                                               const std::vector<std::string>& headers,
                                               const BodySink& sink) {
  const std::string copy(body);
  return Perform(url, &copy, headers, &sink);
}

Result<HttpResponse> HttpClient::Perform(const std::string& url, const std::string* post_body,
                                         const std::vector<std::string>& headers, const BodySink* sink) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);
  HttpResponse response;
  Transfer transfer{&response.body, sink};
  HeaderList list;
  for (const std::string& h : headers) list.list = curl_slist_append(list.list, h.c_str());
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list.list);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  if (post_body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  }
  const CURLcode code = curl_easy_perform(curl);
  curl_off_t total_us = 0;
  curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME_T, &total_us);
  response.elapsed_s = static_cast<double>(total_us) / 1e6;
  if (code != CURLE_OK) return TransportError(code, errbuf, url, response.elapsed_s);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  char* type = nullptr;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
  if (type != nullptr) response.content_type = type;
  std::transform(response.content_type.begin(), response.content_type.end(), response.content_type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return response;
}

}  // namespace k3::client
