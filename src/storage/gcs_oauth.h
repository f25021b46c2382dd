// Google OAuth access tokens for gs:// (GcsStore without HMAC keys), found the way Google's client
// libraries find Application Default Credentials:
//   1. GOOGLE_APPLICATION_CREDENTIALS names a JSON key file:
//      - "type": "service_account": a JWT {iss: client_email, scope, aud: token_uri, iat, exp: iat+3600}
//        signed RS256 with its private_key (OpenSSL), exchanged at its token_uri (default
//        https://oauth2.googleapis.com/token) with grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer;
//      - "type": "authorized_user" (gcloud auth application-default login): its refresh_token exchanged
//        at the token URI with grant_type=refresh_token.
//   2. The GCE / GKE metadata server: GET http://HOST/computeMetadata/v1/instance/service-accounts/
//      default/token with "Metadata-Flavor: Google"; HOST is $GCE_METADATA_HOST or
//      metadata.google.internal.
// Either way the reply is {"access_token": ..., "expires_in": ...}. The token is fetched once, when the
// store opens, and not refreshed (about an hour, as for Azure workload identity): a transfer that outlives
// it fails with a 401/403 and a rerun resumes it. No token, key or assertion ever appears in messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/storage/credential_expiry.h"
#include "src/storage/environment.h"

namespace k3::storage {

// Scope of the tokens (read and write objects).
inline constexpr const char* kGcsReadWriteScope = "https://www.googleapis.com/auth/devstorage.read_write";

struct GoogleAccessToken {
  std::string access_token;
  std::string source;  // "service account NAME (GOOGLE_APPLICATION_CREDENTIALS PATH)", "GCE metadata ..."
  std::optional<WallClock::time_point> expiration;  // from the reply's expires_in
};

// From the key file GOOGLE_APPLICATION_CREDENTIALS names (its text already read); `now_unix` stamps the
// JWT. 3 attempts on transport errors and 5xx.
Result<GoogleAccessToken> GoogleTokenFromKeyFile(std::string_view json_text, const std::string& path,
                                                 int64_t now_unix);

// From the metadata server ($GCE_METADATA_HOST or metadata.google.internal): 2 attempts, 2 s to connect.
Result<GoogleAccessToken> GoogleTokenFromMetadataServer(const EnvLookup& env);

// A compact JWS "BASE64URL(header).BASE64URL(claims).BASE64URL(RS256 signature)" signed with the RSA
// private key in `private_key_pem` (PKCS#8 or PKCS#1 PEM).
Result<std::string> SignJwtRs256(std::string_view header_json, std::string_view claims_json,
                                 std::string_view private_key_pem);

// Base64url without padding (RFC 7515 section 2).
std::string Base64UrlEncode(std::string_view bytes);

}  // namespace k3::storage
