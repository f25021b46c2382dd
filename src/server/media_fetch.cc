// MediaFetcher (media_fetch.h): file: URLs under one directory, http(s) URLs of allowed hosts.
#include "src/server/media_fetch.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>

#include "src/base/curl_transport.h"

namespace k3::server {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "%2F" -> "/" in a file URL's path; a bad escape or a NUL is an error.
Result<std::string> PercentDecodePath(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(in[i + 2])))
      return InvalidArgument("a file: URL with a bad percent escape");
    const char c = static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
    if (c == '\0') return InvalidArgument("a file: URL with a NUL byte");
    out += c;
    i += 2;
  }
  return out;
}

struct Transfer {
  std::string body;
  int64_t max_bytes = 0;
  bool too_large = false;
};

size_t OnData(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (static_cast<int64_t>(t->body.size() + n) > t->max_bytes) {
    t->too_large = true;
    return 0;  // aborts the transfer
  }
  t->body.append(data, n);
  return n;
}

}  // namespace

std::string UrlHost(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  size_t begin = scheme + 3;
  size_t end = url.find_first_of("/?#", begin);
  std::string authority = url.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (const size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    return close == std::string::npos ? "" : Lower(authority.substr(1, close - 1));
  }
  return Lower(authority.substr(0, authority.find(':')));
}

MediaFetcher::MediaFetcher(MediaFetchOptions options) : options_(std::move(options)) {
  for (std::string& domain : options_.allowed_domains) domain = Lower(domain);
  if (!options_.allowed_local_path.empty()) {
    char resolved[PATH_MAX];
    if (realpath(options_.allowed_local_path.c_str(), resolved) != nullptr) local_root_ = resolved;
  }
}

Result<std::string> MediaFetcher::Fetch(const std::string& url) const {
  if (url.rfind("file:", 0) == 0) return FetchFile(url);
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) return FetchHttp(url);
  return InvalidArgument("expected a data:, http(s):// or file: URL");
}

Result<std::string> MediaFetcher::FetchFile(const std::string& url) const {
  if (local_root_.empty()) {
    return InvalidArgument("file: URLs are refused (start the server with --allowed-local-media-path DIR)");
  }
  std::string_view rest = std::string_view(url).substr(5);
  if (rest.rfind("//", 0) == 0) {  // file://host/path: only an empty host or localhost
    rest.remove_prefix(2);
    const size_t slash = rest.find('/');
    const std::string_view host = rest.substr(0, slash);
    if (slash == std::string_view::npos || (!host.empty() && host != "localhost"))
      return InvalidArgument("a file: URL must name a local absolute path (file:///path)");
    rest.remove_prefix(slash);
  }
  K3_ASSIGN_OR_RETURN(std::string path, PercentDecodePath(rest));
  char resolved[PATH_MAX];
  if (path.empty() || path[0] != '/' || realpath(path.c_str(), resolved) == nullptr)
    return InvalidArgument("the file: URL names no readable file");
  const std::string real(resolved);
  if (real.rfind(local_root_ + "/", 0) != 0)
    return InvalidArgument("the file: URL is outside --allowed-local-media-path");
  const int fd = open(real.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidArgument("the file: URL names no readable file");
  struct stat st {};
  std::string bytes;
  Status status = OkStatus();
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    status = InvalidArgument("the file: URL does not name a regular file");
  } else if (st.st_size > options_.max_bytes) {
    status = InvalidArgument("the file is {} bytes; images of at most {} bytes are accepted", st.st_size,
                             options_.max_bytes);
  } else {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    if (done != bytes.size()) status = InvalidArgument("the file could not be read whole");
  }
  close(fd);
  if (!status.ok()) return status;
  return bytes;
}

Result<std::string> MediaFetcher::FetchHttp(const std::string& first_url) const {
  if (options_.allowed_domains.empty()) {
    return InvalidArgument(
        "http(s) image URLs are refused (start the server with --allowed-media-domains HOST ..., or send a "
        "data: URL)");
  }
  EnsureCurlInitialized();
  const auto start = std::chrono::steady_clock::now();
  std::string url = first_url;
  for (int hop = 0; hop <= options_.max_redirects; ++hop) {
    const std::string host = UrlHost(url);
    if (host.empty() || std::find(options_.allowed_domains.begin(), options_.allowed_domains.end(), host) ==
                            options_.allowed_domains.end()) {
      return InvalidArgument("{}the host '{}' is not in --allowed-media-domains",
                             hop > 0 ? "redirected: " : "", host);
    }
    const auto spent =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    const auto left = options_.timeout - spent;
    if (left.count() <= 0)
      return InvalidArgument("fetching the image took longer than {} ms", options_.timeout.count());
    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
    if (curl == nullptr) return Internal("libcurl could not start a transfer");
    Transfer transfer;
    transfer.max_bytes = options_.max_bytes;
    char error[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, OnData);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
    const CURLcode code = curl_easy_perform(curl.get());
    if (transfer.too_large) return InvalidArgument("the image is larger than {} bytes", options_.max_bytes);
    if (code != CURLE_OK) {
      return InvalidArgument("the image could not be fetched from '{}': {}", host, curl_easy_strerror(code));
    }
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 && status < 400) {
      char* location = nullptr;
      curl_easy_getinfo(curl.get(), CURLINFO_REDIRECT_URL, &location);
      if (location == nullptr) return InvalidArgument("a redirect from '{}' without a Location", host);
      url = location;
      if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
        return InvalidArgument("redirected to a URL that is not http(s)");
      continue;
    }
    if (status != 200) return InvalidArgument("fetching the image from '{}' answered HTTP {}", host, status);
    return std::move(transfer.body);
  }
  return InvalidArgument("more than {} redirects", options_.max_redirects);
}

}  // namespace k3::server
