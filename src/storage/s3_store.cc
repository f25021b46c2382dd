// S3Store: requests, retries and the read side (s3_store.h). Writes are in s3_writer.cc.
#include "src/storage/s3_store.h"

#include <curl/curl.h>

#include <algorithm>

#include "src/base/curl_transport.h"
#include "src/base/sha256.h"
#include "src/storage/percent_encoding.h"
#include "src/storage/s3_request.h"
#include "src/storage/s3_xml.h"
#include "src/storage/store_exchange.h"

namespace k3::storage {

Result<std::unique_ptr<ObjectWriter>> OpenS3Writer(S3Store* store, std::string_view key,
                                                   const WriteOptions& options);

S3Options S3OptionsFromEnvironment(const EnvLookup& env) {
  S3Options options;
  if (auto endpoint = env("AWS_ENDPOINT_URL_S3")) {
    options.endpoint = *endpoint;
  } else if (auto generic = env("AWS_ENDPOINT_URL")) {
    options.endpoint = *generic;
  }
  while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
  if (auto region = env("AWS_REGION")) {
    options.region = *region;
  } else if (auto default_region = env("AWS_DEFAULT_REGION")) {
    options.region = *default_region;
  }
  if (auto path_style = env("K3_S3_PATH_STYLE")) options.path_style = *path_style != "0";
  return options;
}

Result<std::unique_ptr<S3Store>> S3Store::Create(const ObjectUri& uri, S3Options options,
                                                 const EnvLookup& env) {
  if (uri.scheme != UriScheme::kS3 && uri.scheme != UriScheme::kGcs && uri.scheme != UriScheme::kOss) {
    return InvalidArgument("'{}' is not an s3://, gs:// or oss:// URI", uri.text);
  }
  AwsCredentials credentials;
  if (options.credentials) {
    credentials = *options.credentials;
  } else {
    auto resolved = ResolveAwsCredentials(env);
    if (!resolved.ok()) return resolved.status().WithPrefix(uri.Describe());
    credentials = std::move(resolved).value();
    if (credentials.expiration && !options.renew_credentials) {
      options.renew_credentials = [env]() -> Result<RenewedCredentials> {
        K3_ASSIGN_OR_RETURN(AwsCredentials fresh, ResolveAwsCredentials(env));
        return RenewedCredentials{std::move(fresh), ""};
      };
    }
  }
  if (options.region.empty() || options.region.find(':') != std::string::npos) {
    return InvalidArgument("{}: region '{}' is not a region name (AWS_REGION)", uri.Describe(),
                           options.region);
  }
  if (options.part_size == 0)
    return InvalidArgument("{}: the multipart part size must be positive", uri.Describe());
  EnsureCurlInitialized();
  return std::unique_ptr<S3Store>(new S3Store(uri, std::move(options), std::move(credentials)));
}

S3Store::S3Store(ObjectUri uri, S3Options options, AwsCredentials credentials)
    : uri_(std::move(uri)), options_(std::move(options)), credentials_(std::move(credentials)) {
  root_ = uri_.prefix;
  if (!root_.empty() && root_.back() != '/') root_ += '/';
  bearer_token_ = std::move(options_.bearer_token);
  options_.bearer_token.clear();
}

std::string S3Store::credential_source() const {
  std::lock_guard lock(credentials_mu_);
  return credentials_.source;
}

Result<RenewedCredentials> S3Store::CurrentCredentials() {
  std::lock_guard lock(credentials_mu_);
  const WallClock::time_point now = WallClock::now();
  if (options_.renew_credentials && NeedsRenewal(credentials_.expiration, now)) {
    auto fresh = options_.renew_credentials();
    if (fresh.ok()) {
      credentials_ = std::move(fresh->credentials);
      bearer_token_ = std::move(fresh->bearer_token);
    } else if (now >= *credentials_.expiration) {
      return fresh.status().WithPrefix(
          fmt::format("{}: the credentials from {} expired and new ones could not be fetched",
                      uri_.Describe(), credentials_.source));
    }
    // Else: the old ones still work for a few minutes; the next request tries again.
  }
  return RenewedCredentials{credentials_, bearer_token_};
}

S3Store::~S3Store() = default;

std::string S3Store::FullKey(std::string_view key) const { return root_ + std::string(key); }

std::string S3Store::Describe(std::string_view key) const { return uri_.Describe(key); }

std::string S3Store::UrlOf(const std::string& full_key, const std::string& query) const {
  const bool path_style = options_.path_style.value_or(!options_.endpoint.empty());
  std::string url;
  if (path_style) {
    const std::string endpoint =
        options_.endpoint.empty() ? "https://s3." + options_.region + ".amazonaws.com" : options_.endpoint;
    url = endpoint + "/" + uri_.bucket + "/";
  } else if (options_.endpoint.empty()) {
    url = "https://" + uri_.bucket + ".s3." + options_.region + ".amazonaws.com/";
  } else {
    // Virtual-hosted on a custom endpoint: the bucket becomes the first label of its host.
    const size_t scheme_end = options_.endpoint.find("://");
    const size_t host_begin = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    url = options_.endpoint.substr(0, host_begin) + uri_.bucket + "." + options_.endpoint.substr(host_begin) +
          "/";
  }
  url += PercentEncode(full_key, /*keep_slash=*/true);
  if (!query.empty()) url += "?" + query;
  return url;
}

Result<S3Store::Reply> S3Store::Execute(Request& request, const std::vector<long>& accepted) {
  std::sort(request.query.begin(), request.query.end());
  std::string query;
  for (const auto& [name, value] : request.query) {
    if (!query.empty()) query += '&';
    query += PercentEncode(name, false) + "=" + PercentEncode(value, false);
  }
  const std::string payload_hash =
      Sha256Hex(std::string_view(reinterpret_cast<const char*>(request.body.data()), request.body.size()));
  const std::string sigv4 = "aws:amz:" + options_.region + ":s3";
  K3_ASSIGN_OR_RETURN(const RenewedCredentials current, CurrentCredentials());
  const AwsCredentials& keys = current.credentials;
  RetriedCall call;
  call.what = request.what;
  call.context = fmt::format("credentials: {}", keys.source);
  call.accepted = accepted;
  call.range_offset = request.range_offset;
  call.dst = request.dst;
  call.prepare = [&](size_t dst_written) {
    StoreExchange exchange;
    exchange.method = request.method;
    exchange.url = UrlOf(request.full_key, query);
    exchange.body = request.body;
    exchange.headers.push_back("x-amz-content-sha256: " + payload_hash);
    if (!keys.session_token.empty())
      exchange.headers.push_back("x-amz-security-token: " + keys.session_token);
    if (!request.content_type.empty()) exchange.headers.push_back("Content-Type: " + request.content_type);
    if (request.range_offset) {
      exchange.curl_range = fmt::format("{}-{}", *request.range_offset + dst_written,
                                        *request.range_offset + request.dst.size() - 1);
    }
    if (current.bearer_token.empty()) {
      exchange.sigv4 = StoreExchange::SigV4{sigv4, keys.access_key_id, keys.secret_access_key};
    } else {
      exchange.headers.push_back("Authorization: Bearer " + current.bearer_token);
    }
    exchange.connect_timeout_s = options_.connect_timeout_s;
    exchange.low_speed_time_s = options_.low_speed_time_s;
    return exchange;
  };
  call.on_http_error = [&](const StoreReply& reply) {
    const S3ErrorReply error = ParseS3Error(reply.body);
    const std::string code_text = error.code.empty() ? "" : " " + error.code;
    const std::string message = error.message.empty() ? "" : ": " + OneLineMessage(error.message);
    StoreHttpError out;
    out.message = fmt::format("{}: HTTP {}{}{}", request.what, reply.status, code_text, message);
    out.retryable = IsRetryableHttp(reply.status, error.code);
    out.endpoint_note = options_.endpoint.empty() ? "" : ", endpoint " + options_.endpoint;
    if (reply.status == 403 || reply.status == 401)
      out.hint = "; check the credentials, the region and the bucket policy";
    return out;
  };
  return RunWithRetries(handles_, options_.retry, call);
}

Status S3Store::CreateBucket() {
  Request request;
  request.method = "PUT";
  request.what = fmt::format("{}://{}", UriSchemeName(uri_.scheme), uri_.bucket);
  // 409 BucketAlreadyOwnedByYou / BucketAlreadyExists: the bucket is there.
  auto reply = Execute(request, {409});
  return reply.ok() ? OkStatus() : reply.status();
}

Result<std::vector<ObjectInfo>> S3Store::List(std::string_view prefix) {
  std::vector<ObjectInfo> out;
  std::string token;
  const std::string full_prefix = FullKey(prefix);
  // Bounded: each page is a request; a store that hands back the same token forever is an error.
  for (int page_index = 0;; ++page_index) {
    if (page_index >= 1'000'000)
      return DataLoss("{}: listing did not end after 1,000,000 pages", Describe(prefix));
    Request request;
    request.what = Describe(prefix);
    request.query = {{"list-type", "2"}, {"max-keys", std::to_string(options_.list_page_size)}};
    if (!full_prefix.empty()) request.query.emplace_back("prefix", full_prefix);
    if (!token.empty()) request.query.emplace_back("continuation-token", token);
    K3_ASSIGN_OR_RETURN(Reply reply, Execute(request));
    K3_ASSIGN_OR_RETURN(ListObjectsPage page,
                        ParseListObjectsV2(reply.body, "ListObjectsV2 reply for " + request.what));
    for (ObjectInfo& info : page.objects) {
      if (!info.key.starts_with(root_)) continue;
      info.key.erase(0, root_.size());
      if (info.key.empty() || info.key.back() == '/' || IsPartialStateKey(info.key))
        continue;  // folder markers
      out.push_back(std::move(info));
    }
    if (!page.truncated) break;
    if (page.next_continuation_token == token) {
      return DataLoss("{}: the store returned the same continuation token twice", request.what);
    }
    token = page.next_continuation_token;
  }
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Result<ObjectInfo> S3Store::Stat(std::string_view key) {
  Request request;
  request.method = "HEAD";
  request.full_key = FullKey(key);
  request.what = Describe(key);
  K3_ASSIGN_OR_RETURN(Reply reply, Execute(request));
  return ObjectInfo{std::string(key), reply.content_length, reply.etag, reply.last_modified};
}

Status S3Store::ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) {
  if (dst.empty()) return OkStatus();
  Request request;
  request.full_key = FullKey(key);
  request.what = Describe(key);
  request.range_offset = offset;
  request.dst = dst;
  auto reply = Execute(request, {416});
  if (!reply.ok()) return reply.status();
  if (reply->status == 416) {
    return DataLoss("{}: the range [{}, {}) is past the end of the object (HTTP 416)", request.what, offset,
                    offset + dst.size());
  }
  return OkStatus();
}

Status S3Store::Delete(std::string_view key) {
  Request request;
  request.method = "DELETE";
  request.full_key = FullKey(key);
  request.what = Describe(key);
  auto reply = Execute(request, {404});
  return reply.ok() ? OkStatus() : reply.status();
}

Result<std::unique_ptr<ObjectWriter>> S3Store::OpenWriter(std::string_view key, const WriteOptions& options) {
  return OpenS3Writer(this, key, options);
}

}  // namespace k3::storage
