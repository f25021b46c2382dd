// Google OAuth tokens for gs:// (gcs_oauth.h) against loopback stand-ins for Google's token endpoint and
// the GCE metadata server (CannedHttpServer): the service-account JWT is checked with the key's public
// half, the forms and headers sent are checked, and errors never carry a key, an assertion or a token.
// Also the gs:// and oss:// settings from the environment (s3_compatible.h) and a bearer token on an
// S3Store request.
#include "src/storage/gcs_oauth.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "src/base/sha256.h"
#include "src/storage/azure_shared_key.h"  // Base64Decode
#include "src/storage/form_post.h"
#include "src/storage/open_store.h"
#include "src/storage/s3_compatible.h"
#include "src/storage/testing/canned_http_server.h"
#include "src/storage/testing/fake_env.h"

namespace k3::storage {
namespace {

using testing::CannedHttpServer;
using testing::FakeEnv;

using PKey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

PKey NewRsaKey() { return PKey(EVP_RSA_gen(2048), EVP_PKEY_free); }

std::string PrivatePem(EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  EXPECT_EQ(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string Base64UrlDecode(std::string text) {
  for (char& c : text) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (text.size() % 4 != 0) text += '=';
  auto decoded = Base64Decode(text);
  EXPECT_TRUE(decoded.ok()) << text;
  return decoded.ok() ? *decoded : "";
}

// The value of `name` in an application/x-www-form-urlencoded body (percent-decoded).
std::string FormValue(const std::string& form, const std::string& name) {
  size_t at = form.find(name + "=");
  if (at == std::string::npos) return "";
  at += name.size() + 1;
  const std::string raw = form.substr(at, form.find('&', at) - at);
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 2 < raw.size()) {
      out += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += raw[i];
    }
  }
  return out;
}

// Checks an RS256 JWS with the public half of `key`; returns its claims.
nlohmann::json VerifiedClaims(const std::string& jwt, EVP_PKEY* key) {
  const size_t dot1 = jwt.find('.'), dot2 = jwt.rfind('.');
  EXPECT_NE(dot1, dot2);
  const std::string input = jwt.substr(0, dot2);
  const std::string signature = Base64UrlDecode(jwt.substr(dot2 + 1));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EXPECT_EQ(EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key), 1);
  EXPECT_EQ(
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()),
      1)
      << "the RS256 signature does not verify";
  const nlohmann::json header = nlohmann::json::parse(Base64UrlDecode(jwt.substr(0, dot1)));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["typ"], "JWT");
  EXPECT_EQ(header["kid"], "key-1");
  return nlohmann::json::parse(Base64UrlDecode(jwt.substr(dot1 + 1, dot2 - dot1 - 1)));
}

TEST(GcsOAuthTest, Base64UrlHasNoPaddingAndUrlSafeLetters) {
  EXPECT_EQ(Base64UrlEncode(""), "");
  EXPECT_EQ(Base64UrlEncode("f"), "Zg");
  EXPECT_EQ(Base64UrlEncode("fo"), "Zm8");
  EXPECT_EQ(Base64UrlEncode("foo"), "Zm9v");
  EXPECT_EQ(Base64UrlEncode(std::string("\xfb\xff\xfe", 3)), "-__-");
  // RFC 7515 appendix A.1: the JOSE header {"typ":"JWT",\r\n "alg":"HS256"} encodes to this.
  EXPECT_EQ(Base64UrlEncode("{\"typ\":\"JWT\",\r\n \"alg\":\"HS256\"}"),
            "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9");
}

// RS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 section 3.3): the signature, opened with the public
// key and no padding, must be the EMSA-PKCS1-v1_5 block of RFC 8017 section 9.2:
// 00 01 FF..FF 00 || DigestInfo(SHA-256) || SHA-256(signing input). (A PSS signature would also verify
// with OpenSSL's defaults elsewhere, so this is checked byte by byte.)
TEST(GcsOAuthTest, Rs256IsPkcs1V15WithSha256) {
  PKey key = NewRsaKey();
  ASSERT_TRUE(key);
  auto jwt = SignJwtRs256("{\"alg\":\"RS256\"}", "{\"iss\":\"joe\"}", PrivatePem(key.get()));
  ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
  const size_t dot2 = jwt->rfind('.');
  EXPECT_EQ(jwt->substr(0, dot2),
            Base64UrlEncode("{\"alg\":\"RS256\"}") + "." + Base64UrlEncode("{\"iss\":\"joe\"}"));
  const std::string signature = Base64UrlDecode(jwt->substr(dot2 + 1));
  ASSERT_EQ(signature.size(), 256u);
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new(key.get(), nullptr),
                                                                  EVP_PKEY_CTX_free);
  ASSERT_EQ(EVP_PKEY_verify_recover_init(ctx.get()), 1);
  ASSERT_EQ(EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_NO_PADDING), 1);
  std::string block(256, '\0');
  size_t length = block.size();
  ASSERT_EQ(
      EVP_PKEY_verify_recover(ctx.get(), reinterpret_cast<unsigned char*>(block.data()), &length,
                              reinterpret_cast<const unsigned char*>(signature.data()), signature.size()),
      1);
  ASSERT_EQ(length, 256u);
  const std::string digest_info(
      "\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01\x05\x00\x04\x20", 19);
  auto hash_hex = Sha256Hex(jwt->substr(0, dot2));
  std::string hash;
  for (size_t i = 0; i < hash_hex.size(); i += 2)
    hash += static_cast<char>(std::stoi(hash_hex.substr(i, 2), nullptr, 16));
  const std::string expected = std::string("\x00\x01", 2) + std::string(256 - 3 - 19 - 32, '\xff') +
                               std::string(1, '\0') + digest_info + hash;
  EXPECT_TRUE(block == expected) << "not an EMSA-PKCS1-v1_5 SHA-256 block";
}

TEST(GcsOAuthTest, ServiceAccountJwtIsSignedAndExchanged) {
  PKey key = NewRsaKey();
  ASSERT_TRUE(key);
  CannedHttpServer google(
      {{200, R"({"access_token":"ya29.test-token","expires_in":3599,"token_type":"Bearer"})"}},
      "application/json");
  const std::string token_uri = google.endpoint() + "/token";
  const nlohmann::json file = {{"type", "service_account"},
                               {"client_email", "k3@proj.iam.gserviceaccount.com"},
                               {"private_key_id", "key-1"},
                               {"private_key", PrivatePem(key.get())},
                               {"token_uri", token_uri}};
  auto token = GoogleTokenFromKeyFile(file.dump(), "/keys/sa.json", 1'700'000'000);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->access_token, "ya29.test-token");
  EXPECT_EQ(token->source,
            "service account k3@proj.iam.gserviceaccount.com (GOOGLE_APPLICATION_CREDENTIALS /keys/sa.json)");
  ASSERT_EQ(google.requests().size(), 1u);
  const CannedHttpServer::Request request = google.requests()[0];
  EXPECT_EQ(request.head.rfind("POST /token ", 0), 0u) << request.head;
  EXPECT_EQ(FormValue(request.body, "grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
  const nlohmann::json claims = VerifiedClaims(FormValue(request.body, "assertion"), key.get());
  EXPECT_EQ(claims["iss"], "k3@proj.iam.gserviceaccount.com");
  EXPECT_EQ(claims["aud"], token_uri);
  EXPECT_EQ(claims["scope"], kGcsReadWriteScope);
  EXPECT_EQ(claims["iat"], 1'700'000'000);
  EXPECT_EQ(claims["exp"], 1'700'003'600);
}

TEST(GcsOAuthTest, RefusedExchangeIsOneLineWithoutSecrets) {
  PKey key = NewRsaKey();
  CannedHttpServer google(
      {{400, R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})"}},
      "application/json");
  const std::string pem = PrivatePem(key.get());
  const nlohmann::json file = {{"type", "service_account"},
                               {"client_email", "k3@proj.iam.gserviceaccount.com"},
                               {"private_key", pem},
                               {"token_uri", google.endpoint() + "/token"}};
  auto token = GoogleTokenFromKeyFile(file.dump(), "/keys/sa.json", 1'700'000'000);
  ASSERT_FALSE(token.ok());
  const std::string& message = token.status().message();
  EXPECT_NE(message.find("HTTP 400 invalid_grant: Invalid JWT Signature."), std::string::npos) << message;
  EXPECT_NE(message.find("GOOGLE_APPLICATION_CREDENTIALS /keys/sa.json"), std::string::npos) << message;
  EXPECT_EQ(message.find("PRIVATE KEY"), std::string::npos) << message;
  EXPECT_EQ(message.find(FormValue(google.requests()[0].body, "assertion")), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(GcsOAuthTest, AuthorizedUserRefreshTokenIsExchanged) {
  CannedHttpServer google({{200, R"({"access_token":"ya29.user","expires_in":3599})"}}, "application/json");
  const nlohmann::json file = {{"type", "authorized_user"},
                               {"client_id", "cid.apps.googleusercontent.com"},
                               {"client_secret", "csecret"},
                               {"refresh_token", "1//refresh"},
                               {"token_uri", google.endpoint() + "/token"}};
  auto token = GoogleTokenFromKeyFile(file.dump(), "/adc.json", 0);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->access_token, "ya29.user");
  const std::string body = google.requests()[0].body;
  EXPECT_EQ(FormValue(body, "grant_type"), "refresh_token");
  EXPECT_EQ(FormValue(body, "refresh_token"), "1//refresh");
  EXPECT_EQ(FormValue(body, "client_id"), "cid.apps.googleusercontent.com");
}

TEST(GcsOAuthTest, BadKeyFilesSayWhatIsWrong) {
  EXPECT_NE(GoogleTokenFromKeyFile("[1]", "/k.json", 0).status().message().find("not a JSON object"),
            std::string::npos);
  EXPECT_NE(GoogleTokenFromKeyFile(R"({"type":"external_account"})", "/k.json", 0)
                .status()
                .message()
                .find("'external_account' are not supported"),
            std::string::npos);
  auto bad_pem = GoogleTokenFromKeyFile(
      R"({"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n"})",
      "/k.json", 0);
  EXPECT_NE(bad_pem.status().message().find("not a PEM private key"), std::string::npos)
      << bad_pem.status().message();
}

TEST(GcsOAuthTest, MetadataServerIsAskedWithTheFlavorHeader) {
  CannedHttpServer metadata({{200, R"({"access_token":"ya29.gce","expires_in":3000,"token_type":"Bearer"})"}},
                            "application/json");
  const std::string host = metadata.endpoint().substr(7);  // 127.0.0.1:PORT
  auto token = GoogleTokenFromMetadataServer(FakeEnv({{"GCE_METADATA_HOST", host}}));
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->access_token, "ya29.gce");
  EXPECT_EQ(token->source, "GCE metadata server " + host);
  const std::string head = metadata.requests()[0].head;
  EXPECT_EQ(head.rfind("GET /computeMetadata/v1/instance/service-accounts/default/token ", 0), 0u) << head;
  EXPECT_NE(head.find("Metadata-Flavor: Google"), std::string::npos) << head;
}

TEST(GcsOptionsTest, HmacKeysSignWithRegionAutoOnThePathStyleEndpoint) {
  auto options = GcsOptionsFromEnvironment(FakeEnv(
      {{"GCS_HMAC_ACCESS_KEY_ID", "GOOG1EXAMPLE"}, {"GCS_HMAC_SECRET", "s"}, {"AWS_ACCESS_KEY_ID", "x"}}));
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->endpoint, "https://storage.googleapis.com");
  EXPECT_EQ(options->region, "auto");
  EXPECT_EQ(options->path_style, true);
  EXPECT_EQ(options->credentials->access_key_id, "GOOG1EXAMPLE");
  EXPECT_EQ(options->credentials->source, "env GCS_HMAC_ACCESS_KEY_ID");
  EXPECT_TRUE(options->bearer_token.empty());
  auto half = GcsOptionsFromEnvironment(FakeEnv({{"GCS_HMAC_ACCESS_KEY_ID", "GOOG1EXAMPLE"}}));
  EXPECT_NE(half.status().message().find("but not GCS_HMAC_SECRET"), std::string::npos);
}

TEST(GcsOptionsTest, WithoutCredentialsTheErrorNamesEverySourceTried) {
  // A metadata host that refuses connections (a closed loopback port) stands for "not on GCE".
  std::string closed;
  {
    CannedHttpServer gone({}, "application/json");
    closed = gone.endpoint().substr(7);
  }
  auto options = GcsOptionsFromEnvironment(FakeEnv({{"GCE_METADATA_HOST", closed}}));
  ASSERT_FALSE(options.ok());
  const std::string& message = options.status().message();
  EXPECT_EQ(options.status().code(), StatusCode::kNotFound);
  EXPECT_NE(message.find("GCS_HMAC_ACCESS_KEY_ID"), std::string::npos) << message;
  EXPECT_NE(message.find("GOOGLE_APPLICATION_CREDENTIALS"), std::string::npos) << message;
  EXPECT_NE(message.find("GCE metadata server " + closed), std::string::npos) << message;
}

TEST(GcsOptionsTest, BearerTokenReplacesTheSignatureOnRequests) {
  CannedHttpServer metadata({{200, R"({"access_token":"ya29.bearer","expires_in":3000})"}},
                            "application/json");
  CannedHttpServer gcs({{200, "hello"}}, "application/octet-stream");
  auto env =
      FakeEnv({{"GCE_METADATA_HOST", metadata.endpoint().substr(7)}, {"K3_GCS_ENDPOINT", gcs.endpoint()}});
  auto uri = ParseObjectUri("gs://bkt/pre");
  ASSERT_TRUE(uri.ok());
  auto store = OpenObjectStore(*uri, {}, env);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<uint8_t> got(5);
  ASSERT_TRUE((*store)->ReadRange("obj", 0, got).ok());
  EXPECT_EQ(std::string(got.begin(), got.end()), "hello");
  const std::string head = gcs.requests()[0].head;
  EXPECT_EQ(head.rfind("GET /bkt/pre/obj ", 0), 0u) << head;
  EXPECT_NE(head.find("Authorization: Bearer ya29.bearer"), std::string::npos) << head;
  EXPECT_EQ(head.find("AWS4-HMAC-SHA256"), std::string::npos) << head;
  EXPECT_NE((*store)->Describe("obj").find("gs://bkt/pre/obj"), std::string::npos);
}

// A token with 60 s left (inside the 5-minute margin) is fetched again before the next request, which
// carries the new one; the new one (an hour) is kept for the request after.
TEST(GcsOptionsTest, TokenAboutToExpireIsFetchedAgain) {
  CannedHttpServer metadata({{200, R"({"access_token":"ya29.first","expires_in":60})"},
                             {200, R"({"access_token":"ya29.second","expires_in":3599})"}},
                            "application/json");
  CannedHttpServer gcs({{200, "a"}, {200, "b"}}, "application/octet-stream");
  auto env =
      FakeEnv({{"GCE_METADATA_HOST", metadata.endpoint().substr(7)}, {"K3_GCS_ENDPOINT", gcs.endpoint()}});
  auto store = OpenObjectStore(ParseObjectUri("gs://bkt/pre").value(), {}, env);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<uint8_t> got(1);
  ASSERT_TRUE((*store)->ReadRange("x", 0, got).ok());
  ASSERT_TRUE((*store)->ReadRange("y", 0, got).ok());
  EXPECT_EQ(metadata.requests().size(), 2u);
  ASSERT_EQ(gcs.requests().size(), 2u);
  for (const auto& r : gcs.requests())
    EXPECT_NE(r.head.find("Authorization: Bearer ya29.second"), std::string::npos) << r.head;
}

TEST(OssOptionsTest, RegionGivesTheVirtualHostedEndpoint) {
  auto options = OssOptionsFromEnvironment(FakeEnv({{"OSS_REGION", "oss-cn-hangzhou"},
                                                    {"ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI"},
                                                    {"ALIBABA_CLOUD_ACCESS_KEY_SECRET", "s"},
                                                    {"ALIBABA_CLOUD_SECURITY_TOKEN", "sts"}}));
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->endpoint, "https://s3.oss-cn-hangzhou.aliyuncs.com");
  EXPECT_EQ(options->region, "cn-hangzhou");
  EXPECT_EQ(options->path_style, false);
  EXPECT_EQ(options->credentials->session_token, "sts");
  EXPECT_EQ(options->credentials->source, "env ALIBABA_CLOUD_ACCESS_KEY_ID");
}

TEST(OssOptionsTest, EndpointGivesTheRegionAndOssKeysComeFirst) {
  auto options =
      OssOptionsFromEnvironment(FakeEnv({{"OSS_ENDPOINT", "s3.oss-eu-central-1-internal.aliyuncs.com"},
                                         {"OSS_ACCESS_KEY_ID", "a"},
                                         {"OSS_ACCESS_KEY_SECRET", "b"},
                                         {"ALIBABA_CLOUD_ACCESS_KEY_ID", "c"},
                                         {"ALIBABA_CLOUD_ACCESS_KEY_SECRET", "d"}}));
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->endpoint, "https://s3.oss-eu-central-1-internal.aliyuncs.com");
  EXPECT_EQ(options->region, "eu-central-1");
  EXPECT_EQ(options->credentials->source, "env OSS_ACCESS_KEY_ID");
  EXPECT_NE(
      OssOptionsFromEnvironment(FakeEnv({{"OSS_ACCESS_KEY_ID", "a"}})).status().message().find("OSS_REGION"),
      std::string::npos);
  EXPECT_NE(OssOptionsFromEnvironment(FakeEnv({{"OSS_REGION", "cn-beijing"}}))
                .status()
                .message()
                .find("no OSS credentials"),
            std::string::npos);
}

}  // namespace
}  // namespace k3::storage
