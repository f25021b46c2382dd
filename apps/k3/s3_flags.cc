// S3Flags (s3_flags.h): registration and the merge over the environment's S3 options.
#include "apps/k3/s3_flags.h"

namespace k3::app {

void S3Flags::Add(CLI::App* cmd) {
  cmd->add_option("--s3-endpoint", endpoint,
                  "S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL_S3, "
                  "AWS_ENDPOINT_URL, else AWS)");
  cmd->add_option("--s3-region", region,
                  "region for signing (default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1)");
  cmd->add_flag("--s3-path-style", path_style,
                "address buckets as ENDPOINT/bucket (default with an endpoint)");
  cmd->add_flag("--s3-virtual-hosted", virtual_hosted, "address buckets as bucket.ENDPOINT");
}

storage::S3Options S3Flags::Options(const storage::EnvLookup& env) const {
  storage::S3Options s3 = storage::S3OptionsFromEnvironment(env);
  if (!endpoint.empty()) s3.endpoint = endpoint;
  while (!s3.endpoint.empty() && s3.endpoint.back() == '/') s3.endpoint.pop_back();
  if (!region.empty()) s3.region = region;
  if (path_style) s3.path_style = true;
  if (virtual_hosted) s3.path_style = false;
  return s3;
}

}  // namespace k3::app
