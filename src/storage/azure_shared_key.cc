// Shared Key string-to-sign and HMAC (azure_shared_key.h) over OpenSSL's HMAC and Base64 coders.
#include "src/storage/azure_shared_key.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>

#include "src/base/text.h"

namespace k3::storage {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string SharedKeyStringToSign(const SharedKeyRequest& request, std::string_view account) {
  std::map<std::string, std::string> headers;  // lower-cased names
  for (const auto& [name, value] : request.headers) headers[Lower(name)] = TrimWhitespace(value);
  auto standard = [&](const char* name) -> std::string {
    auto it = headers.find(name);
    if (it == headers.end()) return "";
    if (std::string_view(name) == "content-length" && it->second == "0") return "";
    return it->second;
  };
  std::string out = request.method + "\n";
  for (const char* name :
       {"content-encoding", "content-language", "content-length", "content-md5", "content-type", "date",
        "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range"}) {
    out += standard(name);
    out += '\n';
  }
  for (const auto& [name, value] : headers) {  // std::map: sorted by lower-cased name
    if (name.starts_with("x-ms-")) out += name + ":" + value + "\n";
  }
  out += "/" + std::string(account) + (request.url_path.empty() ? "/" : request.url_path);
  std::map<std::string, std::string> query;
  for (const auto& [name, value] : request.query) {
    std::string& slot = query[Lower(name)];
    slot = slot.empty() ? value : slot + "," + value;  // repeated names: values comma-joined
  }
  for (const auto& [name, value] : query) out += "\n" + name + ":" + value;
  return out;
}

std::string HmacSha256Base64(std::string_view key, std::string_view text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &mac_size);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(mac), mac_size));
}

std::string SharedKeyAuthorization(std::string_view string_to_sign, std::string_view account,
                                   std::string_view decoded_key) {
  return "SharedKey " + std::string(account) + ":" + HmacSha256Base64(decoded_key, string_to_sign);
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  const bool shaped =
      text.size() % 4 == 0 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=';
      });
  // '=' only as the last one or two characters (padding).
  const size_t pad = text.find('=');
  const bool padded = pad == std::string_view::npos ||
                      (text.size() - pad <= 2 && text.find_first_not_of('=', pad) == std::string_view::npos);
  if (text.empty() || !shaped || !padded)
    return InvalidArgument("not valid Base64 ({} characters)", text.size());
  std::string out(3 * text.size() / 4, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return InvalidArgument("not valid Base64 ({} characters)", text.size());
  // EVP_DecodeBlock counts the padding's zero bytes: drop one per '='.
  size_t size = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;
  out.resize(size);
  return out;
}

}  // namespace k3::storage
