// HfStore (hf_store.h): URLs, the retry loop and the read-only ObjectStore calls.
#include "src/storage/hf_store.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "src/base/curl_transport.h"
#include "src/storage/hf_tree.h"
#include "src/storage/s3_store.h"  // AwsUriEncode: RFC 3986 encoding

namespace k3::storage {
namespace {

// The Hub's message from an error body ({"error": "..."}), else the body's first line.
std::string HubMessage(const std::string& body) {
  const nlohmann::json reply = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object() && reply.contains("error") && reply["error"].is_string()) {
    return OneLineMessage(reply["error"].get<std::string>());
  }
  return OneLineMessage(body.substr(0, body.find('\n')));
}

}  // namespace

HfOptions HfOptionsFromEnvironment(const EnvLookup& env) {
  HfOptions options;
  if (auto endpoint = env("HF_ENDPOINT")) options.endpoint = *endpoint;
  while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (auto token = env(name)) {
      options.token = *token;
      options.token_source = std::string("env ") + name;
      break;
    }
  }
  return options;
}

Result<std::unique_ptr<HfStore>> HfStore::Create(const ObjectUri& uri, HfOptions options) {
  if (uri.scheme != UriScheme::kHuggingFace) return InvalidArgument("'{}' is not an hf:// URI", uri.text);
  if (options.endpoint.find("://") == std::string::npos) {
    return InvalidArgument("{}: HF_ENDPOINT '{}' is not a URL (https://host[:port])", uri.Describe(),
                           options.endpoint);
  }
  EnsureCurlInitialized();
  return std::unique_ptr<HfStore>(new HfStore(uri, std::move(options)));
}

HfStore::HfStore(ObjectUri uri, HfOptions options) : uri_(std::move(uri)), options_(std::move(options)) {
  root_ = uri_.prefix;
  if (!root_.empty() && root_.back() != '/') root_ += '/';
}

std::string HfStore::Describe(std::string_view key) const { return uri_.Describe(key); }

std::string HfStore::ResolveUrl(std::string_view key) const {
  return options_.endpoint + "/" + AwsUriEncode(uri_.bucket, true) + "/resolve/" +
         AwsUriEncode(uri_.revision, false) + "/" + AwsUriEncode(root_ + std::string(key), true);
}

Result<StoreReply> HfStore::Execute(const std::string& method, const std::string& url,
                                    const std::string& what, std::span<uint8_t> dst, uint64_t offset,
                                    const std::vector<long>& accepted) {
  const std::string context = "credentials: " + options_.token_source;
  size_t dst_written = 0;
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    StoreExchange exchange;
    exchange.method = method;
    exchange.url = url;
    exchange.follow_redirects = true;
    exchange.connect_timeout_s = options_.connect_timeout_s;
    exchange.low_speed_time_s = options_.low_speed_time_s;
    if (!options_.token.empty()) exchange.headers.push_back("Authorization: Bearer " + options_.token);
    if (!dst.empty()) {
      exchange.dst = dst.subspan(dst_written);
      exchange.curl_range = fmt::format("{}-{}", offset + dst_written, offset + dst.size() - 1);
    }
    StoreExchangeOutcome attempted = RunStoreExchange(handles_, exchange);
    StoreReply& reply = attempted.reply;
    dst_written += attempted.dst_written;
    bool retry = false;
    if (attempted.overflow) {
      return DataLoss("{}: the server sent more bytes than the requested range {} ({})", what,
                      exchange.curl_range, context);
    }
    if (attempted.code != CURLE_OK) {
      const Status error = TransportError(attempted.code, attempted.curl_error, what, attempted.seconds);
      last_error = error.message();
      if (!IsRetryableTransport(attempted.code)) {
        return Status(error.code(), fmt::format("{} ({})", error.message(), context));
      }
      retry = true;
    } else if (reply.status >= 200 && reply.status < 300) {
      if (dst_written >= dst.size()) return std::move(reply);
      last_error = fmt::format("the body of {} ended after {} of {} bytes", what, dst_written, dst.size());
      retry = true;
    } else if (std::find(accepted.begin(), accepted.end(), reply.status) != accepted.end()) {
      return std::move(reply);
    } else {
      const std::string message = HubMessage(reply.body);
      last_error = fmt::format("{}: HTTP {}{}", what, reply.status, message.empty() ? "" : ": " + message);
      retry = IsRetryableHttp(reply.status, "");
      if (!retry) {
        std::string hint;
        if (reply.status == 401 || reply.status == 403) {
          hint = options_.token.empty() ? "; a private or gated repository needs HF_TOKEN"
                                        : "; check that the token may read this repository";
        }
        const std::string text =
            fmt::format("{} ({}, endpoint {}){}", last_error, context, options_.endpoint, hint);
        return Status(reply.status == 404 ? StatusCode::kNotFound : StatusCode::kIoError, text);
      }
    }
    if (!retry || attempt >= options_.retry.max_attempts) {
      return IoError("{} (gave up after {} attempts; {})", last_error, attempt, context);
    }
    std::this_thread::sleep_for(options_.retry.Backoff(attempt));
  }
}

Result<std::vector<ObjectInfo>> HfStore::List(std::string_view prefix) {
  const std::string what = Describe(prefix);
  std::string dir = root_;
  if (!dir.empty()) dir.pop_back();
  std::string url = options_.endpoint + "/api/models/" + AwsUriEncode(uri_.bucket, true) + "/tree/" +
                    AwsUriEncode(uri_.revision, false) + (dir.empty() ? "" : "/" + AwsUriEncode(dir, true)) +
                    "?recursive=true";
  std::vector<ObjectInfo> out;
  for (int page = 0; !url.empty(); ++page) {
    if (page >= 100'000) return DataLoss("{}: the Hub's listing did not end after 100,000 pages", what);
    K3_ASSIGN_OR_RETURN(StoreReply reply, Execute("GET", url, what));
    K3_ASSIGN_OR_RETURN(std::vector<HfTreeEntry> entries, ParseHfTreePage(reply.body, "listing of " + what));
    for (HfTreeEntry& entry : entries) {
      if (!entry.path.starts_with(root_)) continue;
      std::string key = entry.path.substr(root_.size());
      if (key.empty() || !key.starts_with(prefix) || IsPartialStateKey(key)) continue;
      out.push_back(ObjectInfo{std::move(key), entry.size, std::move(entry.oid), ""});
    }
    std::string next = NextLinkUrl(reply.link);
    if (next.starts_with("/")) next = options_.endpoint + next;
    // The token goes to the endpoint only: a next page elsewhere is refused rather than followed.
    if (!next.empty() && !next.starts_with(options_.endpoint + "/")) {
      return DataLoss("{}: the Hub's next page ({}) is not on the endpoint {}", what, next.substr(0, 200),
                      options_.endpoint);
    }
    if (next == url) return DataLoss("{}: the Hub returned the same next page twice", what);
    url = std::move(next);
  }
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Result<ObjectInfo> HfStore::Stat(std::string_view key) {
  K3_ASSIGN_OR_RETURN(StoreReply reply, Execute("HEAD", ResolveUrl(key), Describe(key)));
  return ObjectInfo{std::string(key), reply.content_length, reply.etag, reply.last_modified};
}

Status HfStore::ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) {
  if (dst.empty()) return OkStatus();
  const std::string what = Describe(key);
  auto reply = Execute("GET", ResolveUrl(key), what, dst, offset, {416});
  if (!reply.ok()) return reply.status();
  if (reply->status == 416) {
    return DataLoss("{}: the range [{}, {}) is past the end of the object (HTTP 416)", what, offset,
                    offset + dst.size());
  }
  return OkStatus();
}

Result<std::unique_ptr<ObjectWriter>> HfStore::OpenWriter(std::string_view key, const WriteOptions&) {
  return Unimplemented(
      "{}: hf:// is read-only (k3 reads from the Hugging Face Hub but does not upload); sync to a local "
      "directory or a bucket instead",
      Describe(key));
}

Status HfStore::Delete(std::string_view key) {
  return Unimplemented("{}: hf:// is read-only; nothing can be deleted there", Describe(key));
}

}  // namespace k3::storage
