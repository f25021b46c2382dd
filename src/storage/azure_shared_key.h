// Azure Storage Shared Key signing for the Blob service, as Microsoft documents it in "Authorize with
// Shared Key" (learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key), for
// x-ms-version 2015-02-21 and later:
//
//   StringToSign = VERB\n Content-Encoding\n Content-Language\n Content-Length\n Content-MD5\n
//                  Content-Type\n Date\n If-Modified-Since\n If-Match\n If-None-Match\n
//                  If-Unmodified-Since\n Range\n CanonicalizedHeaders CanonicalizedResource
//   Authorization: SharedKey ACCOUNT:Base64(HMAC-SHA256(Base64Decode(account key), UTF-8(StringToSign)))
//
// Content-Length is empty when it is 0. CanonicalizedHeaders: every x-ms-* header, name lower-cased,
// sorted by name, "name:value\n" with the value trimmed. CanonicalizedResource: "/ACCOUNT" + the URI
// path as sent (still percent-encoded; on a path-style endpoint such as azurite's
// http://127.0.0.1:10000/devstoreaccount1 the path starts with the account, which then appears twice,
// exactly as the Azure SDKs sign it), then per query parameter, sorted by lower-cased name,
// "\nname:value" with the value decoded.
//
// Pure functions over a request description: no I/O, no clock; the key never appears in any output but
// the HMAC. Tested against a fixed vector in azure_shared_key_test.cc.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/status.h"

namespace k3::storage {

struct SharedKeyRequest {
  std::string method;    // "GET", "PUT", ...
  std::string url_path;  // "/devstoreaccount1/container/a%20b", percent-encoded as sent
  // Query parameters, names as sent and values NOT encoded ("comp" -> "list").
  std::vector<std::pair<std::string, std::string>> query;
  // Every header sent, by name (any case). Standard headers absent from the map sign as "".
  std::map<std::string, std::string> headers;
};

// The canonical string-to-sign of `request` for `account`.
std::string SharedKeyStringToSign(const SharedKeyRequest& request, std::string_view account);

// "SharedKey ACCOUNT:SIGNATURE". `decoded_key` is the account key's bytes (Base64Decode of what the
// portal shows).
std::string SharedKeyAuthorization(std::string_view string_to_sign, std::string_view account,
                                   std::string_view decoded_key);

// Base64(HMAC-SHA256(key, text)): the signature of Shared Key and of SAS tokens.
std::string HmacSha256Base64(std::string_view key, std::string_view text);

// Standard Base64 with padding (OpenSSL's EVP block coder).
std::string Base64Encode(std::string_view bytes);
// InvalidArgument (without echoing the text, which may be a secret) unless `text` is valid padded
// Base64.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace k3::storage
