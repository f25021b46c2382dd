// OpenObjectStore: the ObjectStore for a URI: file paths -> FileStore; s3://, gs:// and oss:// ->
// S3Store (gs:// and oss:// with the settings of s3_compatible.h, from the environment; of
// StoreOptions::s3 only the part size applies to them); az:// -> AzureStore; hf:// -> HfStore
// (read-only).
#pragma once

#include <memory>

#include "src/storage/azure_store.h"
#include "src/storage/environment.h"
#include "src/storage/object_store.h"
#include "src/storage/object_uri.h"
#include "src/storage/s3_store.h"

namespace k3::storage {

struct StoreOptions {
  // S3 settings; unset fields come from the environment (S3OptionsFromEnvironment).
  std::optional<S3Options> s3;
  // Azure settings; unset: AzureOptions' defaults, with endpoint and credentials from the environment.
  std::optional<AzureOptions> azure;
};

Result<std::unique_ptr<ObjectStore>> OpenObjectStore(const ObjectUri& uri, const StoreOptions& options = {},
                                                     const EnvLookup& env = ProcessEnvironment());

}  // namespace k3::storage
