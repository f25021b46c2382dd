// The S3 flags `k3 weights` and `k3 serve s3://...` share (--s3-endpoint, --s3-region, --s3-path-style,
// --s3-virtual-hosted), layered over the environment's settings (storage::S3OptionsFromEnvironment).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "src/storage/environment.h"
#include "src/storage/s3_store.h"

namespace k3::app {

struct S3Flags {
  std::string endpoint;
  std::string region;
  bool path_style = false;
  bool virtual_hosted = false;

  void Add(CLI::App* cmd);
  // The environment's S3 options with the flags that were given on top.
  storage::S3Options Options(const storage::EnvLookup& env) const;
};

}  // namespace k3::app
