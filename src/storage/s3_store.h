// S3Store: an ObjectStore over the S3 REST API with libcurl (Amazon S3 and S3-compatible stores; also
// gs:// and oss://, whose settings come from s3_compatible.h).
//
// Requests are signed with AWS Signature V4 by libcurl (CURLOPT_AWS_SIGV4), with an explicit
// x-amz-content-sha256 header holding the payload's hash (libcurl 7.88 does not add it; S3 requires
// it). Query strings are built already in canonical form (sorted, RFC 3986-encoded), which is what the
// signer of libcurl 7.88 signs.
//
// Addressing: path-style (http://endpoint/bucket/key) when an endpoint is given (S3-compatible stores,
// emulators), virtual-hosted (https://bucket.s3.REGION.amazonaws.com/key) for AWS itself; override with
// S3Options::path_style. Listing: ListObjectsV2 with continuation tokens.
//
// Every request is retried per RetryPolicy on throttling, 5xx and broken connections; a ranged read
// that breaks mid-body continues from the last byte received. Transfers have a connect timeout and a
// low-speed limit (a stalled connection fails, then is retried), never an unbounded wait.
//
// Writes: an object up to part_size goes up in one PUT at Commit(). A larger one becomes a multipart
// upload, one part per part_size bytes; after each part a small journal object "<key>.k3upload" records
// the upload id and the parts' ETags, so a writer of the same key and size can resume after a crash
// (ListParts is not needed, and the journal is where the destination is). Commit() completes the upload
// and deletes the journal; until then nothing is visible under the key.
//
// Errors are one line naming the object (s3://bucket/key), the HTTP status, the S3 error code and the
// credential source ("env AWS_ACCESS_KEY_ID"); never the secret.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "src/storage/aws_credentials.h"
#include "src/storage/environment.h"
#include "src/storage/object_store.h"
#include "src/storage/object_uri.h"
#include "src/storage/retry_policy.h"
#include "src/storage/store_exchange.h"

namespace k3::storage {

// Fresh credentials from the same source, for S3Options::renew_credentials.
struct RenewedCredentials {
  AwsCredentials credentials;
  std::string bearer_token;  // gs:// OAuth; empty for SigV4 keys
};

struct S3Options {
  // "http://127.0.0.1:4568" (scheme, host, port; no path). Empty: https://s3.<region>.amazonaws.com.
  std::string endpoint;
  std::string region = "us-east-1";
  // Unset: path-style exactly when an endpoint is given.
  std::optional<bool> path_style;
  // Multipart part size (S3 needs >= 5 MiB for every part but the last); objects up to this size are one
  // PUT.
  uint64_t part_size = uint64_t{16} << 20;
  int list_page_size = 1000;  // max-keys of each ListObjectsV2 request
  RetryPolicy retry;
  double connect_timeout_s = 10;
  // A transfer slower than 1 KiB/s for this long is aborted (and retried).
  double low_speed_time_s = 30;
  // Unset: ResolveAwsCredentials on the environment.
  std::optional<AwsCredentials> credentials;
  // An OAuth access token (gs:// without HMAC keys): requests carry "Authorization: Bearer" instead of a
  // SigV4 signature; `credentials` then only names the token's source.
  std::string bearer_token;
  // Temporary credentials or token (credentials->expiration set): fetches new ones from the same source,
  // called under the store's lock once the expiration is within kRenewBefore. Create sets it when it
  // resolves the environment chain; gs:// sets it for OAuth tokens.
  std::function<Result<RenewedCredentials>()> renew_credentials;
};

// Endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, region from AWS_REGION or AWS_DEFAULT_REGION
// (default us-east-1), path-style forced by K3_S3_PATH_STYLE=1/0 when set.
S3Options S3OptionsFromEnvironment(const EnvLookup& env);

class S3Store : public ObjectStore {
 public:
  // Resolves credentials (options.credentials, else the environment chain) but sends no request.
  static Result<std::unique_ptr<S3Store>> Create(const ObjectUri& uri, S3Options options,
                                                 const EnvLookup& env = ProcessEnvironment());
  ~S3Store() override;

  Result<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Status ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) override;
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key,
                                                   const WriteOptions& options) override;
  Status Delete(std::string_view key) override;
  std::string Describe(std::string_view key = {}) const override;

  // Creates the bucket (PUT /bucket); for tests and first-time setup. Ok when it already exists.
  Status CreateBucket();

  const S3Options& options() const { return options_; }
  std::string credential_source() const;

  // Implementation types, public so s3_store.cc's helpers can name them.
  struct Request;
  using Reply = StoreReply;
  // Runs one request with retries. Non-2xx replies become errors naming `what`, except the statuses
  // listed in `accepted`, which come back as replies.
  Result<Reply> Execute(Request& request, const std::vector<long>& accepted = {});
  // The full key in the bucket of a key relative to the store's root.
  std::string FullKey(std::string_view key) const;

 private:
  S3Store(ObjectUri uri, S3Options options, AwsCredentials credentials);
  std::string UrlOf(const std::string& full_key, const std::string& query) const;
  // The credentials and bearer token to sign the next request with, renewed first when they are about
  // to expire (a failed renewal is an error only once the old ones have expired).
  Result<RenewedCredentials> CurrentCredentials();

  ObjectUri uri_;
  std::string root_;  // uri_.prefix with a trailing '/', or empty
  S3Options options_;
  mutable std::mutex credentials_mu_;
  AwsCredentials credentials_;  // guarded by credentials_mu_
  std::string bearer_token_;    // guarded by credentials_mu_
  CurlHandlePool handles_;
};

}  // namespace k3::storage
