// AzureStore: requests, signing, retries and the read side (azure_store.h). Writes are in
// azure_writer.cc.
#include "src/storage/azure_store.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>
#include <thread>

#include "src/base/curl_transport.h"
#include "src/storage/azure_request.h"
#include "src/storage/azure_shared_key.h"
#include "src/storage/azure_xml.h"
#include "src/storage/percent_encoding.h"
#include "src/storage/store_exchange.h"

namespace k3::storage {

Result<std::unique_ptr<ObjectWriter>> OpenAzureWriter(AzureStore* store, std::string_view key,
                                                      const WriteOptions& options);

namespace {

// "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 1123), what x-ms-date takes.
std::string HttpDateNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  return fmt::format("{}, {:02d} {} {} {:02d}:{:02d}:{:02d} GMT", kDays[utc.tm_wday], utc.tm_mday,
                     kMonths[utc.tm_mon], utc.tm_year + 1900, utc.tm_hour, utc.tm_min, utc.tm_sec);
}

// The path part of an endpoint URL ("http://127.0.0.1:10000/devstoreaccount1" -> "/devstoreaccount1").
std::string EndpointPath(const std::string& endpoint) {
  const size_t scheme_end = endpoint.find("://");
  const size_t slash = endpoint.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  return slash == std::string::npos ? "" : endpoint.substr(slash);
}

}  // namespace

Result<std::unique_ptr<AzureStore>> AzureStore::Create(const ObjectUri& uri, AzureOptions options,
                                                       const EnvLookup& env) {
  if (uri.scheme != UriScheme::kAzure) return InvalidArgument("'{}' is not an az:// URI", uri.text);
  AzureAccess access;
  if (options.access) {
    access = *options.access;
  } else {
    auto resolved = ResolveAzureAccess(uri.account, env);
    if (!resolved.ok()) return resolved.status().WithPrefix(uri.Describe());
    access = std::move(resolved).value();
  }
  if (options.block_size == 0 || options.block_size > (uint64_t{4000} << 20)) {
    return InvalidArgument("{}: the block size must be between 1 byte and 4000 MiB", uri.Describe());
  }
  EnsureCurlInitialized();
  return std::unique_ptr<AzureStore>(new AzureStore(uri, std::move(options), std::move(access)));
}

AzureStore::AzureStore(ObjectUri uri, AzureOptions options, AzureAccess access)
    : uri_(std::move(uri)), options_(std::move(options)), access_(std::move(access)) {
  root_ = uri_.prefix;
  if (!root_.empty() && root_.back() != '/') root_ += '/';
  endpoint_path_ = EndpointPath(access_.endpoint);
}

AzureStore::~AzureStore() = default;

std::string AzureStore::FullKey(std::string_view key) const { return root_ + std::string(key); }

std::string AzureStore::Describe(std::string_view key) const { return uri_.Describe(key); }

std::string AzureStore::Redact(std::string text) const {
  const AzureCredentials& c = access_.credentials;
  std::vector<std::string> secrets;
  if (!c.sas_token.empty()) {
    secrets.push_back(c.sas_token);
    // The signature alone, as a server may quote it (sig=...&, URL-encoded or not).
    const size_t sig = c.sas_token.find("sig=");
    if (sig != std::string::npos) {
      std::string value = c.sas_token.substr(sig + 4);
      value = value.substr(0, value.find('&'));
      if (!value.empty()) secrets.push_back(value);
    }
  }
  if (!c.decoded_key.empty()) secrets.push_back(Base64Encode(c.decoded_key));
  if (!c.bearer_token.empty()) secrets.push_back(c.bearer_token);
  constexpr std::string_view kMask = "[secret]";
  for (const std::string& secret : secrets) {
    // Each step moves past the mask, so the loop ends after at most text.size() steps.
    for (size_t pos = text.find(secret); pos != std::string::npos;
         pos = text.find(secret, pos + kMask.size())) {
      text.replace(pos, secret.size(), kMask);
    }
  }
  return text;
}

Result<AzureStore::Reply> AzureStore::Execute(Request& request, const std::vector<long>& accepted) {
  // The path as sent (and signed): [endpoint path]/container[/blob], blob names RFC 3986-encoded.
  std::string url_path = endpoint_path_ + "/" + uri_.bucket;
  if (!request.blob.empty()) url_path += "/" + PercentEncode(request.blob, /*keep_slash=*/true);
  std::string query;
  for (const auto& [name, value] : request.query) {
    query += (query.empty() ? "" : "&") + PercentEncode(name, false) + "=" + PercentEncode(value, false);
  }
  if (access_.credentials.kind == AzureAuthKind::kSas) {
    query += (query.empty() ? "" : "&") + access_.credentials.sas_token;
  }
  const std::string scheme_host = access_.endpoint.substr(0, access_.endpoint.size() - endpoint_path_.size());
  const std::string url = scheme_host + url_path + (query.empty() ? "" : "?" + query);
  const std::string context = fmt::format("credentials: {}", access_.credentials.source);

  RetriedCall call;
  call.what = request.what;
  call.context = context;
  call.accepted = accepted;
  call.range_offset = request.range_offset;
  call.dst = request.dst;
  call.redact = [this](std::string text) { return Redact(text); };
  call.prepare = [&](size_t dst_written) {
    // Headers that are sent and signed (the date changes per attempt).
    std::map<std::string, std::string> signed_headers = {{"x-ms-date", HttpDateNow()},
                                                         {"x-ms-version", kAzureApiVersion}};
    for (const auto& [name, value] : request.headers) signed_headers[name] = value;
    if (request.method == "PUT") signed_headers["Content-Length"] = std::to_string(request.body.size());
    if (request.range_offset) {
      const uint64_t first = *request.range_offset + dst_written;
      const uint64_t last = *request.range_offset + request.dst.size() - 1;
      signed_headers["Range"] = fmt::format("bytes={}-{}", first, last);
    }
    StoreExchange exchange;
    std::vector<std::string>& headers = exchange.headers;
    for (const auto& [name, value] : signed_headers) {
      if (name != "Content-Length") headers.push_back(name + ": " + value);  // libcurl sends the length
    }
    headers.push_back("Expect:");  // no 100-continue round trip before a block's body
    if (access_.credentials.kind == AzureAuthKind::kSharedKey) {
      SharedKeyRequest to_sign{request.method, url_path, request.query, signed_headers};
      headers.push_back("Authorization: " +
                        SharedKeyAuthorization(SharedKeyStringToSign(to_sign, uri_.account), uri_.account,
                                               access_.credentials.decoded_key));
    } else if (access_.credentials.kind == AzureAuthKind::kBearer) {
      headers.push_back("Authorization: Bearer " + access_.credentials.bearer_token);
    }
    exchange.method = request.method;
    exchange.url = url;
    exchange.body = request.body;
    exchange.connect_timeout_s = options_.connect_timeout_s;
    exchange.low_speed_time_s = options_.low_speed_time_s;
    return exchange;
  };
  call.on_http_error = [&](const StoreReply& reply) {
    const AzureErrorReply error = ParseAzureError(reply.body);
    const std::string error_code = error.code.empty() ? reply.error_code : error.code;
    const std::string code_text = error_code.empty() ? "" : " " + error_code;
    const std::string message = error.message.empty() ? "" : ": " + OneLineMessage(error.message);
    StoreHttpError out;
    out.message = fmt::format("{}: HTTP {}{}{}", request.what, reply.status, code_text, message);
    out.retryable = IsRetryableHttp(reply.status, error_code);
    out.endpoint_note = ", endpoint " + access_.endpoint;
    if (reply.status == 403 || reply.status == 401) {
      out.hint = "; check the account key or the SAS token (its expiry and permissions) and the account name";
    } else if (error_code == "ContainerNotFound") {
      out.hint = fmt::format("; create it first (az storage container create --account-name {} --name {})",
                             uri_.account, uri_.bucket);
    }
    return out;
  };
  return RunWithRetries(handles_, options_.retry, call);
}

Status AzureStore::CreateContainer() {
  Request request;
  request.method = "PUT";
  request.query = {{"restype", "container"}};
  request.what = "az://" + uri_.account + "/" + uri_.bucket;
  // 409 ContainerAlreadyExists: the container is there.
  auto reply = Execute(request, {409});
  return reply.ok() ? OkStatus() : reply.status();
}

Result<std::vector<ObjectInfo>> AzureStore::List(std::string_view prefix) {
  std::vector<ObjectInfo> out;
  std::string marker;
  const std::string full_prefix = FullKey(prefix);
  // Bounded: each page is a request; a store that hands back the same marker forever is an error.
  for (int page_index = 0;; ++page_index) {
    if (page_index >= 1'000'000)
      return DataLoss("{}: listing did not end after 1,000,000 pages", Describe(prefix));
    Request request;
    request.what = Describe(prefix);
    request.query = {
        {"restype", "container"}, {"comp", "list"}, {"maxresults", std::to_string(options_.list_page_size)}};
    if (!full_prefix.empty()) request.query.emplace_back("prefix", full_prefix);
    if (!marker.empty()) request.query.emplace_back("marker", marker);
    K3_ASSIGN_OR_RETURN(Reply reply, Execute(request));
    K3_ASSIGN_OR_RETURN(ListBlobsPage page,
                        ParseListBlobs(reply.body, "List Blobs reply for " + request.what));
    for (ObjectInfo& info : page.objects) {
      if (!info.key.starts_with(root_)) continue;
      info.key.erase(0, root_.size());
      if (info.key.empty() || info.key.back() == '/' || IsPartialStateKey(info.key))
        continue;  // folder markers
      out.push_back(std::move(info));
    }
    if (page.next_marker.empty()) break;
    if (page.next_marker == marker) {
      return DataLoss("{}: the store returned the same NextMarker twice", request.what);
    }
    marker = page.next_marker;
  }
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Result<ObjectInfo> AzureStore::Stat(std::string_view key) {
  Request request;
  request.method = "HEAD";
  request.blob = FullKey(key);
  request.what = Describe(key);
  K3_ASSIGN_OR_RETURN(Reply reply, Execute(request));
  return ObjectInfo{std::string(key), reply.content_length, reply.etag, reply.last_modified};
}

Status AzureStore::ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) {
  if (dst.empty()) return OkStatus();
  Request request;
  request.blob = FullKey(key);
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

Status AzureStore::Delete(std::string_view key) {
  Request request;
  request.method = "DELETE";
  request.blob = FullKey(key);
  request.what = Describe(key);
  auto reply = Execute(request, {404});
  return reply.ok() ? OkStatus() : reply.status();
}

Result<std::unique_ptr<ObjectWriter>> AzureStore::OpenWriter(std::string_view key,
                                                             const WriteOptions& options) {
  return OpenAzureWriter(this, key, options);
}

}  // namespace k3::storage
