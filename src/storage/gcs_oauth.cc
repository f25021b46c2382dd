// Google OAuth access tokens (gcs_oauth.h): the service-account JWT signed with OpenSSL, the token
// exchanges through form_post.h, and the replies parsed by ParseTokenReply (azure_workload_identity.h).
#include "src/storage/gcs_oauth.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "src/storage/azure_shared_key.h"         // Base64Encode
#include "src/storage/azure_workload_identity.h"  // ParseTokenReply
#include "src/storage/form_post.h"
#include "src/storage/percent_encoding.h"

namespace k3::storage {
namespace {

constexpr int kTokenAttempts = 3;
constexpr const char* kDefaultTokenUri = "https://oauth2.googleapis.com/token";

// A string member of a JSON object, or "" when absent or not a string.
std::string StringField(const nlohmann::json& object, const char* name) {
  if (!object.contains(name) || !object[name].is_string()) return "";
  return object[name].get<std::string>();
}

Result<GoogleAccessToken> Exchange(const std::string& token_uri, const std::string& form,
                                   std::string source) {
  auto reply = PostForm(token_uri, form, "application/json", kTokenAttempts);
  if (!reply.ok()) {
    return reply.status().WithPrefix(fmt::format("{} (after {} attempts)", source, kTokenAttempts));
  }
  K3_ASSIGN_OR_RETURN(OAuthTokenReply token, ParseTokenReply(reply->body, reply->status, source));
  return GoogleAccessToken{std::move(token.access_token), std::move(source), token.expiration};
}

}  // namespace

std::string Base64UrlEncode(std::string_view bytes) {
  std::string out = Base64Encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

Result<std::string> SignJwtRs256(std::string_view header_json, std::string_view claims_json,
                                 std::string_view private_key_pem) {
  const std::string signing_input = Base64UrlEncode(header_json) + "." + Base64UrlEncode(claims_json);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())), BIO_free);
  if (!bio) return Internal("BIO_new_mem_buf failed");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  if (!key) return InvalidArgument("the private_key is not a PEM private key");
  if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA)
    return InvalidArgument("the private_key is not an RSA key");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t length = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(signing_input.data());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &length, data, signing_input.size()) != 1) {
    return Internal("RS256 signing could not start (OpenSSL)");
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length, data,
                     signing_input.size()) != 1) {
    return Internal("RS256 signing failed (OpenSSL)");
  }
  signature.resize(length);
  return signing_input + "." + Base64UrlEncode(signature);
}

Result<GoogleAccessToken> GoogleTokenFromKeyFile(std::string_view json_text, const std::string& path,
                                                 int64_t now_unix) {
  const nlohmann::json key = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  const std::string where = "GOOGLE_APPLICATION_CREDENTIALS " + path;
  if (!key.is_object()) return InvalidArgument("{}: not a JSON object", where);
  const std::string type = StringField(key, "type");
  std::string token_uri = StringField(key, "token_uri");
  if (token_uri.empty()) token_uri = kDefaultTokenUri;
  if (type == "service_account") {
    const std::string email = StringField(key, "client_email");
    const std::string pem = StringField(key, "private_key");
    const std::string source = fmt::format("service account {} ({})", email, where);
    if (email.empty() || pem.empty()) {
      return InvalidArgument("{}: a service_account key needs client_email and private_key", where);
    }
    nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
    if (const std::string kid = StringField(key, "private_key_id"); !kid.empty()) header["kid"] = kid;
    const nlohmann::json claims = {{"iss", email},
                                   {"scope", kGcsReadWriteScope},
                                   {"aud", token_uri},
                                   {"iat", now_unix},
                                   {"exp", now_unix + 3600}};
    auto jwt = SignJwtRs256(header.dump(), claims.dump(), pem);
    if (!jwt.ok()) return jwt.status().WithPrefix(source);
    return Exchange(token_uri,
                    "grant_type=" + PercentEncode("urn:ietf:params:oauth:grant-type:jwt-bearer", false) +
                        "&assertion=" + PercentEncode(*jwt, false),
                    source);
  }
  if (type == "authorized_user") {
    const std::string client_id = StringField(key, "client_id");
    const std::string client_secret = StringField(key, "client_secret");
    const std::string refresh_token = StringField(key, "refresh_token");
    if (client_id.empty() || client_secret.empty() || refresh_token.empty()) {
      return InvalidArgument("{}: an authorized_user file needs client_id, client_secret and refresh_token",
                             where);
    }
    return Exchange(token_uri,
                    "grant_type=refresh_token&client_id=" + PercentEncode(client_id, false) +
                        "&client_secret=" + PercentEncode(client_secret, false) +
                        "&refresh_token=" + PercentEncode(refresh_token, false),
                    fmt::format("authorized user {} ({})", client_id, where));
  }
  return InvalidArgument(
      "{}: credentials of type '{}' are not supported (service_account and authorized_user are)", where,
      type);
}

Result<GoogleAccessToken> GoogleTokenFromMetadataServer(const EnvLookup& env) {
  const std::string host = env("GCE_METADATA_HOST").value_or("metadata.google.internal");
  const std::string source = "GCE metadata server " + host;
  const std::string url = "http://" + host + "/computeMetadata/v1/instance/service-accounts/default/token";
  CredentialRequest request;
  request.url = url;
  request.headers = {"Metadata-Flavor: Google", "Accept: application/json"};
  request.attempts = 2;
  request.connect_timeout_ms = 2'000;
  auto reply = SendCredentialRequest(request);
  if (!reply.ok()) {
    return reply.status().WithPrefix(fmt::format("{} (after {} attempts)", source, request.attempts));
  }
  K3_ASSIGN_OR_RETURN(OAuthTokenReply token, ParseTokenReply(reply->body, reply->status, source));
  return GoogleAccessToken{std::move(token.access_token), source, token.expiration};
}

}  // namespace k3::storage
