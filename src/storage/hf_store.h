// HfStore: a read-only ObjectStore over a Hugging Face Hub model repository (hf://org/repo[@rev][/dir]).
//
//   List   GET {endpoint}/api/models/{org}/{repo}/tree/{revision}[/{dir}]?recursive=true, page after page
//          through the Link header's rel="next" URL (hf_tree.h); sizes and ids come from it.
//   Stat   HEAD {endpoint}/{org}/{repo}/resolve/{revision}/{path}, following redirects.
//   Read   GET of the same URL with a Range header, following redirects (LFS files are redirected to a
//          CDN host); a body that breaks continues from the last byte received, as in S3Store.
//   Write  refused (Unimplemented): the Hub is a source only; sync to a directory or a bucket.
//
// The token ($HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN) goes as "Authorization: Bearer" to the endpoint's
// host and port only: libcurl drops it when a redirect leads elsewhere. Requests are retried per
// RetryPolicy (429, 5xx, broken connections). Errors are one line naming the object (hf://org/repo/key),
// the HTTP status, the Hub's message and the credential source ("env HF_TOKEN" or "no token"), never the
// token.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/storage/environment.h"
#include "src/storage/object_store.h"
#include "src/storage/object_uri.h"
#include "src/storage/retry_policy.h"
#include "src/storage/store_exchange.h"

namespace k3::storage {

struct HfOptions {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string token;                                // empty: anonymous (public repositories)
  std::string token_source = "no token";            // for messages
  RetryPolicy retry;
  double connect_timeout_s = 10;
  double low_speed_time_s = 30;
};

// HF_ENDPOINT, HF_TOKEN (else HUGGING_FACE_HUB_TOKEN).
HfOptions HfOptionsFromEnvironment(const EnvLookup& env);

class HfStore : public ObjectStore {
 public:
  // Sends no request.
  static Result<std::unique_ptr<HfStore>> Create(const ObjectUri& uri, HfOptions options);

  Result<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Status ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) override;
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key,
                                                   const WriteOptions& options) override;
  Status Delete(std::string_view key) override;
  std::string Describe(std::string_view key = {}) const override;

 private:
  HfStore(ObjectUri uri, HfOptions options);
  // One request with retries; `accepted` non-2xx statuses come back as replies, others become errors
  // naming `what`. A ranged read (dst non-empty) continues where a broken attempt stopped.
  Result<StoreReply> Execute(const std::string& method, const std::string& url, const std::string& what,
                             std::span<uint8_t> dst = {}, uint64_t offset = 0,
                             const std::vector<long>& accepted = {});
  std::string ResolveUrl(std::string_view key) const;

  ObjectUri uri_;
  std::string root_;  // uri_.prefix with a trailing '/', or empty
  HfOptions options_;
  CurlHandlePool handles_;
};

}  // namespace k3::storage
