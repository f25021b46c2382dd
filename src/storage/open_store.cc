// OpenObjectStore (open_store.h).
#include "src/storage/open_store.h"

#include "src/storage/file_store.h"
#include "src/storage/hf_store.h"
#include "src/storage/s3_compatible.h"

namespace k3::storage {

Result<std::unique_ptr<ObjectStore>> OpenObjectStore(const ObjectUri& uri, const StoreOptions& options,
                                                     const EnvLookup& env) {
  switch (uri.scheme) {
    case UriScheme::kFile:
      return std::unique_ptr<ObjectStore>(new FileStore(uri.prefix));
    case UriScheme::kS3: {
      K3_ASSIGN_OR_RETURN(std::unique_ptr<S3Store> store,
                          S3Store::Create(uri, options.s3.value_or(S3OptionsFromEnvironment(env)), env));
      return std::unique_ptr<ObjectStore>(std::move(store));
    }
    case UriScheme::kAzure: {
      K3_ASSIGN_OR_RETURN(std::unique_ptr<AzureStore> store,
                          AzureStore::Create(uri, options.azure.value_or(AzureOptions{}), env));
      return std::unique_ptr<ObjectStore>(std::move(store));
    }
    case UriScheme::kGcs:
    case UriScheme::kOss: {
      auto settings =
          uri.scheme == UriScheme::kGcs ? GcsOptionsFromEnvironment(env) : OssOptionsFromEnvironment(env);
      if (!settings.ok()) return settings.status().WithPrefix(uri.Describe());
      if (options.s3) settings->part_size = options.s3->part_size;  // --s3-part-size-mib applies here too
      K3_ASSIGN_OR_RETURN(std::unique_ptr<S3Store> store,
                          S3Store::Create(uri, std::move(settings).value(), env));
      return std::unique_ptr<ObjectStore>(std::move(store));
    }
    case UriScheme::kHuggingFace: {
      K3_ASSIGN_OR_RETURN(std::unique_ptr<HfStore> store,
                          HfStore::Create(uri, HfOptionsFromEnvironment(env)));
      return std::unique_ptr<ObjectStore>(std::move(store));
    }
    case UriScheme::kSentinel:
      break;
  }
  return InvalidArgument("'{}': not a parsed storage URI", uri.text);
}

}  // namespace k3::storage
