// S3Store: requests, retries and the read side (s3_store.h). Writes are in s3_writer.cc.
#include "src/storage/s3_store.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <thread>

#include "src/base/curl_transport.h"
#include "src/storage/s3_request.h"
#include "src/storage/s3_xml.h"
#include "src/storage/sha256.h"

namespace k3::storage {

Result<std::unique_ptr<ObjectWriter>> OpenS3Writer(S3Store* store, std::string_view key,
                                                   const WriteOptions& options);

namespace {

struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void Add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
};

// One attempt's state, shared with libcurl's callbacks.
struct Transfer {
  CURL* curl = nullptr;
  S3Store::Reply* reply = nullptr;
  std::span<uint8_t> dst;  // remaining destination of a ranged read (2xx bodies only)
  size_t dst_written = 0;
  bool overflow = false;  // the server sent more than the range
  std::span<const uint8_t> upload;
  size_t uploaded = 0;
};

long ResponseCode(CURL* curl) {
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  const long status = ResponseCode(t->curl);
  if (t->dst.data() != nullptr && status >= 200 && status < 300) {
    if (n > t->dst.size() - t->dst_written) {
      t->overflow = true;
      return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    std::copy(data, data + n, t->dst.data() + t->dst_written);
    t->dst_written += n;
    return n;
  }
  if (t->reply->body.size() + n > (size_t{64} << 20)) return 0;  // an error or listing body above 64 MiB
  t->reply->body.append(data, n);
  return n;
}

size_t OnUpload(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = std::min(size * count, t->upload.size() - t->uploaded);
  std::copy(t->upload.data() + t->uploaded, t->upload.data() + t->uploaded + n, buffer);
  t->uploaded += n;
  return n;
}

// Rewinds the upload when libcurl resends the body (redirects, auth).
int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > t->upload.size())
    return CURL_SEEKFUNC_FAIL;
  t->uploaded = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name == "etag") t->reply->etag = UnquoteEtag(Trim(line.substr(colon + 1)));
    if (name == "last-modified") t->reply->last_modified = Trim(line.substr(colon + 1));
  }
  return size * count;
}

// One line, at most 300 characters, of a server's message.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= 300) {
      out += "...";
      break;
    }
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return Trim(out);
}

}  // namespace

std::string AwsUriEncode(std::string_view text, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

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
  if (uri.scheme != UriScheme::kS3) return InvalidArgument("'{}' is not an s3:// URI", uri.text);
  AwsCredentials credentials;
  if (options.credentials) {
    credentials = *options.credentials;
  } else {
    auto resolved = ResolveAwsCredentials(env);
    if (!resolved.ok()) return resolved.status().WithPrefix(uri.Describe());
    credentials = std::move(resolved).value();
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
}

S3Store::~S3Store() {
  for (void* handle : pool_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* S3Store::AcquireHandle() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      void* handle = pool_.back();
      pool_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void S3Store::ReleaseHandle(void* handle) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  pool_.push_back(handle);
}

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
  url += AwsUriEncode(full_key, /*keep_slash=*/true);
  if (!query.empty()) url += "?" + query;
  return url;
}

Result<S3Store::Reply> S3Store::Execute(Request& request, const std::vector<long>& accepted) {
  std::sort(request.query.begin(), request.query.end());
  std::string query;
  for (const auto& [name, value] : request.query) {
    if (!query.empty()) query += '&';
    query += AwsUriEncode(name, false) + "=" + AwsUriEncode(value, false);
  }
  const std::string payload_hash =
      Sha256Hex(std::string_view(reinterpret_cast<const char*>(request.body.data()), request.body.size()));
  const std::string sigv4 = "aws:amz:" + options_.region + ":s3";
  const std::string context = fmt::format("credentials: {}", credentials_.source);

  size_t dst_written = 0;  // a ranged read continues where a broken attempt stopped
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    Reply reply;
    Transfer transfer;
    CURL* curl = static_cast<CURL*>(AcquireHandle());
    if (curl == nullptr) return Internal("{}: curl_easy_init failed", request.what);
    curl_easy_reset(curl);
    transfer.curl = curl;
    transfer.reply = &reply;
    transfer.upload = request.body;
    HeaderList headers;
    headers.Add("x-amz-content-sha256: " + payload_hash);
    if (!credentials_.session_token.empty())
      headers.Add("x-amz-security-token: " + credentials_.session_token);
    if (!request.content_type.empty()) headers.Add("Content-Type: " + request.content_type);
    std::string range;
    if (request.range_offset) {
      transfer.dst = request.dst.subspan(dst_written);
      const uint64_t first = *request.range_offset + dst_written;
      const uint64_t last = *request.range_offset + request.dst.size() - 1;
      range = fmt::format("{}-{}", first, last);
      curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    }
    const std::string url = UrlOf(request.full_key, query);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, credentials_.access_key_id.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, credentials_.secret_access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(options_.low_speed_time_s)));
    if (request.method == "HEAD") {
      curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (request.method == "PUT") {
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, OnUpload);
      curl_easy_setopt(curl, CURLOPT_READDATA, &transfer);
      curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, OnSeek);
      curl_easy_setopt(curl, CURLOPT_SEEKDATA, &transfer);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    } else if (request.method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS,
                       request.body.data() ? reinterpret_cast<const char*>(request.body.data()) : "");
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    } else if (request.method != "GET") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    const CURLcode code = curl_easy_perform(curl);
    curl_off_t total_us = 0, length = -1;
    curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME_T, &total_us);
    curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    reply.status = ResponseCode(curl);
    reply.content_length = length < 0 ? 0 : static_cast<uint64_t>(length);
    ReleaseHandle(curl);
    dst_written += transfer.dst_written;

    bool retry = false;
    if (transfer.overflow) {
      return DataLoss("{}: the server sent more bytes than the requested range {} ({})", request.what, range,
                      context);
    }
    if (code != CURLE_OK) {
      const Status error = TransportError(code, errbuf, request.what, static_cast<double>(total_us) / 1e6);
      last_error = error.message();
      retry = IsRetryableTransport(code);
      if (!retry) return Status(error.code(), fmt::format("{} ({})", error.message(), context));
    } else if (reply.status >= 200 && reply.status < 300) {
      if (request.range_offset && dst_written < request.dst.size()) {
        // The body ended early without a transport error (a proxy closed cleanly): ask for the rest.
        last_error = fmt::format("the body of {} ended after {} of {} bytes", request.what, dst_written,
                                 request.dst.size());
        retry = true;
      } else {
        return reply;
      }
    } else if (std::find(accepted.begin(), accepted.end(), reply.status) != accepted.end()) {
      return reply;
    } else {
      const S3ErrorReply error = ParseS3Error(reply.body);
      const std::string code_text = error.code.empty() ? "" : " " + error.code;
      const std::string message = error.message.empty() ? "" : ": " + OneLine(error.message);
      last_error = fmt::format("{}: HTTP {}{}{}", request.what, reply.status, code_text, message);
      retry = IsRetryableHttp(reply.status, error.code);
      if (!retry) {
        std::string hint;
        if (reply.status == 403 || reply.status == 401) {
          hint = "; check the credentials, the region and the bucket policy";
        }
        const std::string text =
            fmt::format("{} ({}{}){}", last_error, context,
                        options_.endpoint.empty() ? "" : ", endpoint " + options_.endpoint, hint);
        if (reply.status == 404) return Status(StatusCode::kNotFound, text);
        return Status(StatusCode::kIoError, text);
      }
    }
    if (!retry || attempt >= options_.retry.max_attempts) {
      return IoError("{} (gave up after {} attempts; {})", last_error, attempt, context);
    }
    std::this_thread::sleep_for(options_.retry.Backoff(attempt));
  }
}

Status S3Store::CreateBucket() {
  Request request;
  request.method = "PUT";
  request.what = "s3://" + uri_.bucket;
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
