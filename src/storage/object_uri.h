// ObjectUri: where a set of objects lives, parsed from the text a user types.
//
//   /abs/path, ./rel/path, file:///abs/path     local files (kFile; `path` is the directory or file)
//   s3://bucket/prefix                           Amazon S3 or an S3-compatible store (kS3)
//   gs://bucket/prefix                           Google Cloud Storage (kGcs)
//   az://account/container/prefix                Azure Blob Storage (kAzure)
//   oss://bucket/prefix                          Alibaba Cloud OSS (kOss)
//   hf://org/repo[@revision][/prefix]            Hugging Face Hub, read-only (kHuggingFace)
//
// `prefix` never starts with '/', and keeps a trailing '/' when the user typed one. Errors name the URI
// and say how to write it.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace k3::storage {

enum class UriScheme { kFile, kS3, kGcs, kAzure, kOss, kHuggingFace, kSentinel };

// "file", "s3", "gs", "az", "oss", "hf".
const char* UriSchemeName(UriScheme scheme);

struct ObjectUri {
  UriScheme scheme = UriScheme::kSentinel;
  std::string bucket;    // s3/gs/oss bucket, az container, hf "org/repo"; empty for files
  std::string account;   // az storage account; empty otherwise
  std::string revision;  // hf revision ("main" when not given); empty otherwise
  std::string prefix;    // key prefix inside the bucket, or the local path for kFile
  std::string text;      // what was parsed (never holds credentials: URIs with user:password@ are refused)

  // The URI of `key` below this one ("s3://b/pre" + "x.json" -> "s3://b/pre/x.json").
  std::string Describe(std::string_view key = {}) const;
};

Result<ObjectUri> ParseObjectUri(std::string_view text);

// Joins a directory-like prefix and a relative key with exactly one '/' ("a" + "b" -> "a/b",
// "" + "b" -> "b", "a/" + "b" -> "a/b").
std::string JoinKey(std::string_view prefix, std::string_view key);

}  // namespace k3::storage
