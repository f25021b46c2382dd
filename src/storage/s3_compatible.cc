// GcsOptionsFromEnvironment and OssOptionsFromEnvironment (s3_compatible.h).
#include "src/storage/s3_compatible.h"

#include <chrono>

#include "src/base/file.h"
#include "src/storage/gcs_oauth.h"

namespace k3::storage {
namespace {

std::string WithoutTrailingSlashes(std::string text) {
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace

Result<std::optional<AwsCredentials>> KeyPairFromEnvironment(const EnvLookup& env, const char* id_name,
                                                             const char* secret_name,
                                                             const char* token_name) {
  const auto id = env(id_name);
  const auto secret = env(secret_name);
  if (!id && !secret) return std::optional<AwsCredentials>();
  if (!id || !secret) {
    return InvalidArgument("the environment sets {} but not {}; set both", id ? id_name : secret_name,
                           id ? secret_name : id_name);
  }
  return std::optional<AwsCredentials>(AwsCredentials{
      *id, *secret, token_name ? env(token_name).value_or("") : "", "env " + std::string(id_name)});
}

Result<S3Options> GcsOptionsFromEnvironment(const EnvLookup& env) {
  S3Options options;
  options.endpoint =
      WithoutTrailingSlashes(env("K3_GCS_ENDPOINT").value_or("https://storage.googleapis.com"));
  options.region = "auto";
  options.path_style = env("K3_GCS_PATH_STYLE").value_or("1") != "0";
  K3_ASSIGN_OR_RETURN(std::optional<AwsCredentials> hmac,
                      KeyPairFromEnvironment(env, "GCS_HMAC_ACCESS_KEY_ID", "GCS_HMAC_SECRET", nullptr));
  if (hmac) {
    options.credentials = std::move(hmac);
    return options;
  }
  // The token from the key file or the metadata server; fetched again by the store before it expires.
  auto fetch_token = [env]() -> Result<GoogleAccessToken> {
    if (auto path = env("GOOGLE_APPLICATION_CREDENTIALS")) {
      auto text = ReadFileToString(*path);
      if (!text.ok()) return text.status().WithPrefix("GOOGLE_APPLICATION_CREDENTIALS");
      const int64_t now =
          std::chrono::duration_cast<std::chrono::seconds>(WallClock::now().time_since_epoch()).count();
      return GoogleTokenFromKeyFile(*text, *path, now);
    }
    auto token = GoogleTokenFromMetadataServer(env);
    if (!token.ok()) {
      return NotFound(
          "no GCS credentials found (looked at: env GCS_HMAC_ACCESS_KEY_ID, env "
          "GOOGLE_APPLICATION_CREDENTIALS, {}); set an HMAC key pair or a service-account key file",
          token.status().message());
    }
    return token;
  };
  K3_ASSIGN_OR_RETURN(GoogleAccessToken token, fetch_token());
  options.bearer_token = std::move(token.access_token);
  options.credentials = AwsCredentials{"", "", "", token.source, token.expiration};
  options.renew_credentials = [fetch_token]() -> Result<RenewedCredentials> {
    K3_ASSIGN_OR_RETURN(GoogleAccessToken fresh, fetch_token());
    return RenewedCredentials{AwsCredentials{"", "", "", fresh.source, fresh.expiration},
                              std::move(fresh.access_token)};
  };
  return options;
}

Result<S3Options> OssOptionsFromEnvironment(const EnvLookup& env) {
  S3Options options;
  std::string region = env("OSS_REGION").value_or(env("ALIBABA_CLOUD_REGION_ID").value_or(""));
  if (region.starts_with("oss-")) region.erase(0, 4);
  std::string endpoint = env("OSS_ENDPOINT").value_or("");
  if (!endpoint.empty() && endpoint.find("://") == std::string::npos) endpoint = "https://" + endpoint;
  if (endpoint.empty() && region.empty()) {
    return InvalidArgument(
        "set OSS_REGION (e.g. cn-hangzhou) or OSS_ENDPOINT (e.g. https://s3.oss-cn-hangzhou.aliyuncs.com)");
  }
  if (endpoint.empty()) endpoint = "https://s3.oss-" + region + ".aliyuncs.com";
  if (region.empty()) {
    // https://s3.oss-REGION[-internal].aliyuncs.com or https://oss-REGION.aliyuncs.com
    const size_t at = endpoint.find("oss-");
    const size_t end = endpoint.find(".aliyuncs.com");
    if (at == std::string::npos || end == std::string::npos || end < at + 4) {
      return InvalidArgument("OSS_ENDPOINT {} does not name its region; set OSS_REGION too", endpoint);
    }
    region = endpoint.substr(at + 4, end - at - 4);
    if (region.ends_with("-internal")) region.resize(region.size() - 9);
  }
  options.endpoint = WithoutTrailingSlashes(endpoint);
  options.region = region;
  options.path_style = env("K3_OSS_PATH_STYLE").value_or("0") == "1";
  K3_ASSIGN_OR_RETURN(
      std::optional<AwsCredentials> keys,
      KeyPairFromEnvironment(env, "OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "OSS_SESSION_TOKEN"));
  if (!keys) {
    K3_ASSIGN_OR_RETURN(
        keys, KeyPairFromEnvironment(env, "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
                                     "ALIBABA_CLOUD_SECURITY_TOKEN"));
  }
  if (!keys) {
    return NotFound(
        "no OSS credentials found (looked at: env OSS_ACCESS_KEY_ID, env ALIBABA_CLOUD_ACCESS_KEY_ID); set "
        "OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET");
  }
  options.credentials = std::move(keys);
  return options;
}

}  // namespace k3::storage
