// PostForm and FormEncode (form_post.h).
#include "src/storage/form_post.h"

#include <curl/curl.h>

#include <cctype>
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

std::string FormEncode(std::string_view value) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

namespace {

// POSTs `form` (GET when nullptr) up to `attempts` times.
Result<FormPostReply> Send(const std::string& url, const std::string* form,
                           const std::vector<std::string>& header_lines, int attempts,
                           long connect_timeout_ms) {
  EnsureCurlInitialized();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Internal("curl_easy_init failed");
  Status last;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    FormPostReply reply;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_reset(curl);
    curl_slist* headers = nullptr;
    for (const std::string& line : header_lines) headers = curl_slist_append(headers, line.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    if (form != nullptr) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form->c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(form->size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30'000L);
    const auto t0 = std::chrono::steady_clock::now();
    const CURLcode code = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
    if (code == CURLE_OK && (reply.status < 500 || attempt == attempts)) {
      curl_easy_cleanup(curl);
      return reply;
    }
    if (code != CURLE_OK) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      last = TransportError(code, errbuf, url, elapsed);
    }
    if (attempt < attempts) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
  }
  curl_easy_cleanup(curl);
  return last;
}

}  // namespace

Result<FormPostReply> PostForm(const std::string& url, const std::string& form, const std::string& accept,
                               int attempts) {
  return Send(url, &form, {"Accept: " + accept}, attempts, 10'000L);
}

Result<FormPostReply> GetWithRetries(const std::string& url, const std::vector<std::string>& headers,
                                     int attempts, long connect_timeout_ms) {
  return Send(url, nullptr, headers, attempts, connect_timeout_ms);
}

}  // namespace k3::storage
