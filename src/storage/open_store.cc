// OpenObjectStore (open_store.h).
#include "src/storage/open_store.h"

#include "src/storage/file_store.h"

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
    case UriScheme::kOss:
    case UriScheme::kHuggingFace:
      return Unimplemented(
          "'{}': {}:// storage is not implemented yet (file paths, s3:// and az:// are); copy the "
          "objects with the provider's CLI for now",
          uri.Describe(), UriSchemeName(uri.scheme));
    case UriScheme::kSentinel:
      break;
  }
  return InvalidArgument("'{}': not a parsed storage URI", uri.text);
}

}  // namespace k3::storage
