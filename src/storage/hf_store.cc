// HfStore (hf_store.h): URLs, the retry loop and the read-only ObjectStore calls.
#include "src/storage/hf_store.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "src/base/curl_transport.h"  // EnsureCurlInitialized
#include "src/storage/hf_tree.h"
#include "src/storage/percent_encoding.h"

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
  return options_.endpoint + "/" + PercentEncode(uri_.bucket, true) + "/resolve/" +
         PercentEncode(uri_.revision, false) + "/" + PercentEncode(root_ + std::string(key), true);
}

Result<StoreReply> HfStore::Execute(const std::string& method, const std::string& url,
                                    const std::string& what, std::span<uint8_t> dst, uint64_t offset,
                                    const std::vector<long>& accepted) {
  RetriedCall call;
  call.what = what;
  call.context = "credentials: " + options_.token_source;
  call.accepted = accepted;
  if (!dst.empty()) call.range_offset = offset;
  call.dst = dst;
  call.prepare = [&](size_t dst_written) {
    StoreExchange exchange;
    exchange.method = method;
    exchange.url = url;
    exchange.follow_redirects = true;
    exchange.connect_timeout_s = options_.connect_timeout_s;
    exchange.low_speed_time_s = options_.low_speed_time_s;
    if (!options_.token.empty()) exchange.headers.push_back("Authorization: Bearer " + options_.token);
    if (!dst.empty())
      exchange.curl_range = fmt::format("{}-{}", offset + dst_written, offset + dst.size() - 1);
    return exchange;
  };
  call.on_http_error = [&](const StoreReply& reply) {
    const std::string message = HubMessage(reply.body);
    StoreHttpError out;
    out.message = fmt::format("{}: HTTP {}{}", what, reply.status, message.empty() ? "" : ": " + message);
    out.retryable = IsRetryableHttp(reply.status, "");
    out.endpoint_note = ", endpoint " + options_.endpoint;
    if (reply.status == 401 || reply.status == 403) {
      out.hint = options_.token.empty() ? "; a private or gated repository needs HF_TOKEN"
                                        : "; check that the token may read this repository";
    }
    return out;
  };
  return RunWithRetries(handles_, options_.retry, call);
}

Result<std::vector<ObjectInfo>> HfStore::List(std::string_view prefix) {
  const std::string what = Describe(prefix);
  std::string dir = root_;
  if (!dir.empty()) dir.pop_back();
  std::string url = options_.endpoint + "/api/models/" + PercentEncode(uri_.bucket, true) + "/tree/" +
                    PercentEncode(uri_.revision, false) +
                    (dir.empty() ? "" : "/" + PercentEncode(dir, true)) + "?recursive=true";
  std::vector<ObjectInfo> out;
  for (int page = 0; !url.empty(); ++page) {
    if (page >= 100'000) return DataLoss("{}: the Hub's listing did not end after 100,000 pages", what);
    K3_ASSIGN_OR_RETURN(StoreReply reply, Execute("GET", url, what));
    K3_ASSIGN_OR_RETURN(std::vector<HfTreeEntry> entries, ParseHfTreePage(reply.body, "listing of " + what));
    for (HfTreeEntry& entry : entries) {
      if (!entry.path.starts_with(root_)) continue;
      std::string key = entry.path.substr(root_.size());
      if (key.empty() || !key.starts_with(prefix) || IsPartialStateKey(key)) continue;
      // An LFS file's oid is its content's SHA-256: published, so a copy can be checked against it.
      const bool sha256 = entry.lfs && entry.oid.size() == 64 &&
                          entry.oid.find_first_not_of("0123456789abcdef") == std::string::npos;
      ObjectInfo info{std::move(key), entry.size, entry.oid, "", sha256 ? entry.oid : ""};
      out.push_back(std::move(info));
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
