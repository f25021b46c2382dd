// The reference SigV4 signer (sigv4_reference.h), written from AWS's description of the algorithm.
#include "src/storage/testing/sigv4_reference.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>

#include "src/base/sha256.h"

namespace k3::storage::testing {
namespace {

std::string Hmac(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &length);
  return std::string(reinterpret_cast<char*>(out), length);
}

std::string Hex(const std::string& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Trims and collapses runs of spaces, as the canonical header value wants.
std::string CanonicalValue(const std::string& value) {
  std::string out;
  bool space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string CanonicalRequest(const SignedRequest& request) {
  std::vector<std::pair<std::string, std::string>> params;
  size_t pos = 0;
  while (pos < request.query.size()) {
    size_t end = request.query.find('&', pos);
    if (end == std::string::npos) end = request.query.size();
    const std::string param = request.query.substr(pos, end - pos);
    const size_t eq = param.find('=');
    params.emplace_back(param.substr(0, eq), eq == std::string::npos ? "" : param.substr(eq + 1));
    pos = end + 1;
  }
  std::sort(params.begin(), params.end());
  std::string query;
  for (const auto& [name, value] : params) query += (query.empty() ? "" : "&") + name + "=" + value;

  std::vector<std::string> names = request.signed_headers;
  std::sort(names.begin(), names.end());
  std::string headers, signed_list;
  for (const std::string& name : names) {
    std::string value;
    for (const auto& [header, header_value] : request.headers) {
      if (Lower(header) == name) value += (value.empty() ? "" : ",") + CanonicalValue(header_value);
    }
    headers += name + ":" + value + "\n";
    signed_list += (signed_list.empty() ? "" : ";") + name;
  }
  return request.method + "\n" + request.path + "\n" + query + "\n" + headers + "\n" + signed_list + "\n" +
         request.payload_hash;
}

std::string Sigv4Signature(const SignedRequest& request, const std::string& secret) {
  const std::string date = request.amz_date.substr(0, 8);
  const std::string scope = date + "/" + request.region + "/" + request.service + "/aws4_request";
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n" + request.amz_date + "\n" + scope + "\n" + Sha256Hex(CanonicalRequest(request));
  std::string key = Hmac("AWS4" + secret, date);
  key = Hmac(key, request.region);
  key = Hmac(key, request.service);
  key = Hmac(key, "aws4_request");
  return Hex(Hmac(key, string_to_sign));
}

}  // namespace k3::storage::testing
