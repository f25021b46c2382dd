// RunStoreExchange and CurlHandlePool (store_exchange.h): libcurl's callbacks for bodies, uploads and
// headers, and the options every object-store request sets.
#include "src/storage/store_exchange.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "src/base/curl_transport.h"
#include "src/base/text.h"
#include "src/storage/s3_xml.h"  // UnquoteEtag

namespace k3::storage {
namespace {

struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void Add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
};

// One attempt's state, shared with libcurl's callbacks.
struct Transfer {
  CURL* curl = nullptr;
  StoreReply* reply = nullptr;
  std::span<uint8_t> dst;
  size_t dst_written = 0;
  bool overflow = false;
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

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string value = TrimWhitespace(line.substr(colon + 1));
    if (name == "etag") t->reply->etag = UnquoteEtag(value);
    if (name == "last-modified") t->reply->last_modified = value;
    if (name == "x-ms-error-code") t->reply->error_code = value;
    if (name == "link") t->reply->link = value;
  }
  return size * count;
}

}  // namespace

CurlHandlePool::~CurlHandlePool() {
  for (CURL* handle : idle_) curl_easy_cleanup(handle);
}

CURL* CurlHandlePool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      CURL* handle = idle_.back();
      idle_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void CurlHandlePool::Release(CURL* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(handle);
}

StoreExchangeOutcome RunStoreExchange(CurlHandlePool& pool, const StoreExchange& exchange) {
  StoreExchangeOutcome outcome;
  CURL* curl = pool.Acquire();
  if (curl == nullptr) {
    outcome.code = CURLE_FAILED_INIT;
    outcome.curl_error = "curl_easy_init failed";
    return outcome;
  }
  curl_easy_reset(curl);
  Transfer transfer;
  transfer.curl = curl;
  transfer.reply = &outcome.reply;
  transfer.dst = exchange.dst;
  transfer.upload = exchange.body;
  HeaderList headers;
  for (const std::string& header : exchange.headers) headers.Add(header);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, exchange.url.c_str());
  if (!exchange.curl_range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, exchange.curl_range.c_str());
  if (exchange.sigv4) {
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, exchange.sigv4->provider.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, exchange.sigv4->access_key_id.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, exchange.sigv4->secret_access_key.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(exchange.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(exchange.low_speed_time_s)));
  if (exchange.follow_redirects) {
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_UNRESTRICTED_AUTH, 0L);
  }
  if (exchange.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (exchange.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, OnUpload);
    curl_easy_setopt(curl, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, OnSeek);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(exchange.body.size()));
  } else if (exchange.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS,
                     exchange.body.data() ? reinterpret_cast<const char*>(exchange.body.data()) : "");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(exchange.body.size()));
  } else if (exchange.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, exchange.method.c_str());
  }
  outcome.code = curl_easy_perform(curl);
  curl_off_t total_us = 0, length = -1;
  curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME_T, &total_us);
  curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  outcome.reply.status = ResponseCode(curl);
  outcome.reply.content_length = length < 0 ? 0 : static_cast<uint64_t>(length);
  // The handle keeps no pointer into this frame past here: the next user resets it first.
  pool.Release(curl);
  outcome.curl_error = errbuf;
  outcome.seconds = static_cast<double>(total_us) / 1e6;
  outcome.dst_written = transfer.dst_written;
  outcome.overflow = transfer.overflow;
  return outcome;
}

Result<StoreReply> RunWithRetries(CurlHandlePool& pool, const RetryPolicy& policy, const RetriedCall& call) {
  const auto redact = [&call](std::string text) { return call.redact ? call.redact(std::move(text)) : text; };
  size_t dst_written = 0;  // a ranged read continues where a broken attempt stopped
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    StoreExchange exchange = call.prepare(dst_written);
    if (call.range_offset) exchange.dst = call.dst.subspan(dst_written);
    StoreExchangeOutcome attempted = RunStoreExchange(pool, exchange);
    StoreReply& reply = attempted.reply;
    const uint64_t first = call.range_offset.value_or(0) + dst_written;
    dst_written += attempted.dst_written;

    bool retry = false;
    if (attempted.overflow) {
      return DataLoss("{}: the server sent more bytes than the requested range {}-{} ({})", call.what, first,
                      call.range_offset.value_or(0) + call.dst.size() - 1, call.context);
    }
    if (attempted.code != CURLE_OK) {
      const Status error = TransportError(attempted.code, attempted.curl_error, call.what, attempted.seconds);
      last_error = redact(error.message());
      retry = IsRetryableTransport(attempted.code);
      if (!retry) return Status(error.code(), fmt::format("{} ({})", last_error, call.context));
    } else if (reply.status >= 200 && reply.status < 300) {
      if (call.range_offset && dst_written < call.dst.size()) {
        // The body ended early without a transport error (a proxy closed cleanly): ask for the rest.
        last_error =
            fmt::format("the body of {} ended after {} of {} bytes", call.what, dst_written, call.dst.size());
        retry = true;
      } else {
        return std::move(reply);
      }
    } else if (std::find(call.accepted.begin(), call.accepted.end(), reply.status) != call.accepted.end()) {
      return std::move(reply);
    } else {
      const StoreHttpError error = call.on_http_error(reply);
      last_error = redact(error.message);
      retry = error.retryable;
      if (!retry) {
        const std::string text =
            fmt::format("{} ({}{}){}", last_error, call.context, error.endpoint_note, error.hint);
        return Status(reply.status == 404 ? StatusCode::kNotFound : StatusCode::kIoError, text);
      }
    }
    if (attempt >= policy.max_attempts) {
      return IoError("{} (gave up after {} attempts; {})", last_error, attempt, call.context);
    }
    std::this_thread::sleep_for(policy.Backoff(attempt));
  }
}

std::string OneLineMessage(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= 300) {
      out += "...";
      break;
    }
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return TrimWhitespace(out);
}

}  // namespace k3::storage
