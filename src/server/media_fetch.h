// MediaFetcher: reads the bytes of an image URL that is not a data: URL, as vLLM's flags allow it:
//   file:///abs/path      only under --allowed-local-media-path (resolved, symlinks followed, then checked)
//   http(s)://host/...    only for hosts listed in --allowed-media-domains (none listed: refused, no
//                         connection made); redirects are followed by hand, each new host checked again
// with a byte limit (the decode limits' max_bytes) and a time limit for the whole fetch. Every refusal is
// an InvalidArgument a client can act on (the API turns it into a 400 naming the part); nothing is fetched
// from a URL the flags did not allow, and nothing secret (the URL's query) is logged.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace k3::server {

struct MediaFetchOptions {
  std::vector<std::string> allowed_domains;  // host names or IP literals, compared case-insensitively
  std::string allowed_local_path;            // a directory; empty: file: URLs are refused
  int64_t max_bytes = int64_t{20} << 20;
  std::chrono::milliseconds timeout{10'000};  // vLLM's VLLM_IMAGE_FETCH_TIMEOUT is 5 s per image
  int max_redirects = 5;
};

class MediaFetcher {
 public:
  explicit MediaFetcher(MediaFetchOptions options);
  // The URL's bytes, or why not.
  Result<std::string> Fetch(const std::string& url) const;
  // True when http(s) or file: URLs can be read at all (some flag allows them).
  bool AllowsAnyUrl() const { return !options_.allowed_domains.empty() || !local_root_.empty(); }

 private:
  Result<std::string> FetchFile(const std::string& url) const;
  Result<std::string> FetchHttp(const std::string& url) const;
  MediaFetchOptions options_;
  std::string local_root_;  // the allowed local path, resolved
};

// The host of an http(s) URL, lower-cased, without port or brackets ("" when it has none).
std::string UrlHost(const std::string& url);

}  // namespace k3::server
