// S3Store settings for the clouds that speak the S3 XML API under another URI scheme. Both go through
// S3Store (SigV4 by libcurl, retries, multipart writes with a journal); only the endpoint, region,
// addressing and credentials differ.
//
// gs://BUCKET/prefix: Google Cloud Storage's XML API (S3-interoperable).
//   endpoint   $K3_GCS_ENDPOINT, default https://storage.googleapis.com; path-style by default
//              (storage.googleapis.com/BUCKET/key), K3_GCS_PATH_STYLE=0 for BUCKET.storage.googleapis.com
//   region     "auto" in the SigV4 scope
//   credentials, first found:
//     1. HMAC keys GCS_HMAC_ACCESS_KEY_ID + GCS_HMAC_SECRET: SigV4-signed (AWS_* keys are never sent to
//        Google)
//     2. GOOGLE_APPLICATION_CREDENTIALS (service account or authorized user JSON) -> OAuth bearer token
//     3. the GCE / GKE metadata server ($GCE_METADATA_HOST or metadata.google.internal) -> bearer token
//   (gcs_oauth.h for 2 and 3.)
//
// oss://BUCKET/prefix: Alibaba Cloud OSS through its S3-compatible endpoint.
//   endpoint   $OSS_ENDPOINT (a scheme-less value gets https://), else
//              https://s3.oss-$OSS_REGION.aliyuncs.com; region from OSS_REGION or ALIBABA_CLOUD_REGION_ID
//              ("cn-hangzhou"; a leading "oss-" is dropped); one of endpoint or region is needed.
//   addressing virtual-hosted (BUCKET.s3.oss-REGION.aliyuncs.com; OSS refuses path-style);
//              K3_OSS_PATH_STYLE=1 for emulators
//   credentials OSS_ACCESS_KEY_ID + OSS_ACCESS_KEY_SECRET (+ OSS_SESSION_TOKEN), else
//              ALIBABA_CLOUD_ACCESS_KEY_ID + ALIBABA_CLOUD_ACCESS_KEY_SECRET (+
//              ALIBABA_CLOUD_SECURITY_TOKEN); the STS token goes in x-amz-security-token. SigV4 with the
//              region ID in the scope.
#pragma once

#include "src/base/status.h"
#include "src/storage/environment.h"
#include "src/storage/s3_store.h"

namespace k3::storage {

// Resolves the endpoint and credentials (which, for OAuth, fetches a token: one request).
Result<S3Options> GcsOptionsFromEnvironment(const EnvLookup& env);
Result<S3Options> OssOptionsFromEnvironment(const EnvLookup& env);

// An access key pair from two environment variables (and an optional session token variable):
// nullopt when neither is set, an error naming the missing one when only one is.
Result<std::optional<AwsCredentials>> KeyPairFromEnvironment(const EnvLookup& env, const char* id_name,
                                                             const char* secret_name, const char* token_name);

}  // namespace k3::storage
