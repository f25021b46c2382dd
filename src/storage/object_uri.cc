// ParseObjectUri: URI text -> ObjectUri, with errors that show the expected form.
#include "src/storage/object_uri.h"

#include <algorithm>
#include <cctype>

namespace k3::storage {
namespace {

constexpr const char* kForms =
    "expected a local path, file:///path, s3://bucket/prefix, gs://bucket/prefix, "
    "az://account/container/prefix, oss://bucket/prefix or hf://org/repo[@revision]";

bool IsBucketChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// Splits "head/rest" at the first '/'.
std::pair<std::string_view, std::string_view> SplitFirst(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return {s, {}};
  return {s.substr(0, slash), s.substr(slash + 1)};
}

Status CheckName(std::string_view uri, std::string_view what, std::string_view name, std::string_view form) {
  if (name.empty()) return InvalidArgument("'{}': the {} is missing; write it as {}", uri, what, form);
  if (!std::all_of(name.begin(), name.end(), IsBucketChar)) {
    return InvalidArgument(
        "'{}': the {} '{}' may hold only letters, digits, '-', '.' and '_'; write it as {}", uri, what, name,
        form);
  }
  return OkStatus();
}

Status CheckPrefix(std::string_view uri, std::string_view prefix) {
  if (prefix.find("//") != std::string_view::npos) {
    return InvalidArgument("'{}': the key prefix holds an empty path segment ('//'); remove the extra '/'",
                           uri);
  }
  for (char c : prefix) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return InvalidArgument("'{}': the key prefix holds a control character", uri);
    }
  }
  // ".." segments would let a key escape its prefix when mapped onto a local directory.
  std::string_view rest = prefix;
  while (!rest.empty()) {
    auto [segment, tail] = SplitFirst(rest);
    if (segment == "..") return InvalidArgument("'{}': '..' is not allowed in an object key prefix", uri);
    rest = tail;
  }
  return OkStatus();
}

}  // namespace

const char* UriSchemeName(UriScheme scheme) {
  switch (scheme) {
    case UriScheme::kFile:
      return "file";
    case UriScheme::kS3:
      return "s3";
    case UriScheme::kGcs:
      return "gs";
    case UriScheme::kAzure:
      return "az";
    case UriScheme::kOss:
      return "oss";
    case UriScheme::kHuggingFace:
      return "hf";
    case UriScheme::kSentinel:
      break;
  }
  return "?";
}

std::string JoinKey(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  if (key.empty()) return std::string(prefix);
  std::string out(prefix);
  if (out.back() != '/') out += '/';
  out += key;
  return out;
}

std::string ObjectUri::Describe(std::string_view key) const {
  std::string base;
  switch (scheme) {
    case UriScheme::kFile:
      return JoinKey(prefix, key);
    case UriScheme::kAzure:
      base = "az://" + account + "/" + bucket;
      break;
    case UriScheme::kHuggingFace:
      base = "hf://" + bucket + (revision.empty() || revision == "main" ? "" : "@" + revision);
      break;
    default:
      base = std::string(UriSchemeName(scheme)) + "://" + bucket;
      break;
  }
  const std::string path = JoinKey(prefix, key);
  return path.empty() ? base : base + "/" + path;
}

Result<ObjectUri> ParseObjectUri(std::string_view text) {
  ObjectUri uri;
  uri.text = std::string(text);
  if (text.empty()) return InvalidArgument("empty storage location; {}", kForms);
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) {
    uri.scheme = UriScheme::kFile;
    uri.prefix = std::string(text);
    return uri;
  }
  std::string scheme(text.substr(0, sep));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view rest = text.substr(sep + 3);
  if (scheme == "file") {
    if (rest.empty() || rest.front() != '/') {
      return InvalidArgument(
          "'{}': a file URI needs an absolute path (file:///abs/path); for a relative path "
          "drop the file:// and write the path alone",
          text);
    }
    uri.scheme = UriScheme::kFile;
    uri.prefix = std::string(rest);
    return uri;
  }
  const std::string_view authority = SplitFirst(rest).first;
  if (authority.find('@') != std::string_view::npos && scheme != "hf") {
    // The URI itself is not repeated: the part before '@' may be a secret.
    return InvalidArgument(
        "a {}:// URI holds 'user@' or 'key:secret@' credentials, which do not belong in a "
        "storage URI; pass them through the environment or the provider's credentials file",
        scheme);
  }
  if (scheme == "s3" || scheme == "gs" || scheme == "oss") {
    uri.scheme = scheme == "s3" ? UriScheme::kS3 : scheme == "gs" ? UriScheme::kGcs : UriScheme::kOss;
    const std::string form = scheme + "://bucket/prefix";
    auto [bucket, prefix] = SplitFirst(rest);
    K3_RETURN_IF_ERROR(CheckName(text, "bucket", bucket, form));
    K3_RETURN_IF_ERROR(CheckPrefix(text, prefix));
    uri.bucket = std::string(bucket);
    uri.prefix = std::string(prefix);
    return uri;
  }
  if (scheme == "az") {
    uri.scheme = UriScheme::kAzure;
    const std::string form = "az://account/container/prefix";
    auto [account, after_account] = SplitFirst(rest);
    auto [container, prefix] = SplitFirst(after_account);
    K3_RETURN_IF_ERROR(CheckName(text, "storage account", account, form));
    K3_RETURN_IF_ERROR(CheckName(text, "container", container, form));
    K3_RETURN_IF_ERROR(CheckPrefix(text, prefix));
    uri.account = std::string(account);
    uri.bucket = std::string(container);
    uri.prefix = std::string(prefix);
    return uri;
  }
  if (scheme == "hf") {
    uri.scheme = UriScheme::kHuggingFace;
    const std::string form = "hf://org/repo[@revision][/prefix]";
    auto [org, after_org] = SplitFirst(rest);
    auto [repo_rev, prefix] = SplitFirst(after_org);
    std::string_view repo = repo_rev;
    std::string_view revision = "main";
    if (const size_t at = repo_rev.find('@'); at != std::string_view::npos) {
      repo = repo_rev.substr(0, at);
      revision = repo_rev.substr(at + 1);
      if (revision.empty())
        return InvalidArgument("'{}': empty revision after '@'; write it as {}", text, form);
    }
    K3_RETURN_IF_ERROR(CheckName(text, "organisation", org, form));
    K3_RETURN_IF_ERROR(CheckName(text, "repository", repo, form));
    K3_RETURN_IF_ERROR(CheckPrefix(text, prefix));
    uri.bucket = std::string(org) + "/" + std::string(repo);
    uri.revision = std::string(revision);
    uri.prefix = std::string(prefix);
    return uri;
  }
  return InvalidArgument("'{}': unknown scheme '{}://'; {}", text, scheme, kForms);
}

}  // namespace k3::storage
