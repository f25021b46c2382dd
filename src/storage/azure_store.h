// AzureStore: an ObjectStore over the Azure Blob Storage REST API with libcurl, for
// az://ACCOUNT/CONTAINER/prefix (object_uri.h). Endpoint and credentials: azure_credentials.h.
//
// Requests: List Blobs (GET ?restype=container&comp=list, prefix, paged by NextMarker), Get Blob
// Properties (HEAD), ranged Get Blob (Range header), Put Blob, Put Block, Put Block List, Get Block List,
// Delete Blob, Create Container. Each carries x-ms-date and x-ms-version and, by the credential kind, a
// Shared Key Authorization header (azure_shared_key.h), a SAS token appended to the URL, a Bearer token
// (workload identity, azure_workload_identity.h), or nothing.
//
// Every request is retried per RetryPolicy on 5xx (503 ServerBusy, 500 OperationTimedOut), 429 and broken
// connections; a ranged read that breaks mid-body continues from the last byte received. Transfers have
// a connect timeout and a low-speed limit, never an unbounded wait.
//
// Writes: an object up to block_size goes up in one Put Blob at Commit(). A larger one is uploaded as
// blocks of block_size bytes (Put Block), which stay uncommitted, invisible and unlisted, until
// Commit() sends Put Block List. Block ids name the object size, the block size and the block's index,
// so a writer of the same key and size resumes after a crash from the uncommitted blocks Get Block List
// reports (no journal object is needed). Azure drops uncommitted blocks after 7 days.
//
// Errors are one line naming the blob (az://account/container/key), the HTTP status, the Azure error
// code and the credential source ("env AZURE_STORAGE_KEY"); never the key, the SAS signature or a token.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/storage/azure_credentials.h"
#include "src/storage/environment.h"
#include "src/storage/object_store.h"
#include "src/storage/object_uri.h"
#include "src/storage/retry_policy.h"
#include "src/storage/store_exchange.h"

namespace k3::storage {

struct AzureOptions {
  // Block size of large uploads (Put Block allows up to 4000 MiB); objects up to this size are one Put
  // Blob.
  uint64_t block_size = uint64_t{16} << 20;
  int list_page_size = 5000;  // maxresults of each List Blobs request
  RetryPolicy retry;
  double connect_timeout_s = 10;
  // A transfer slower than 1 KiB/s for this long is aborted (and retried).
  double low_speed_time_s = 30;
  // Unset: ResolveAzureAccess on the environment.
  std::optional<AzureAccess> access;
};

// The x-ms-version every request sends.
inline constexpr const char* kAzureApiVersion = "2021-12-02";

class AzureStore : public ObjectStore {
 public:
  // Resolves the endpoint and credentials (options.access, else the environment) but sends no request.
  static Result<std::unique_ptr<AzureStore>> Create(const ObjectUri& uri, AzureOptions options,
                                                    const EnvLookup& env = ProcessEnvironment());
  ~AzureStore() override;

  Result<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Status ReadRange(std::string_view key, uint64_t offset, std::span<uint8_t> dst) override;
  Result<std::unique_ptr<ObjectWriter>> OpenWriter(std::string_view key,
                                                   const WriteOptions& options) override;
  Status Delete(std::string_view key) override;
  std::string Describe(std::string_view key = {}) const override;

  // Creates the container; for tests and first-time setup. Ok when it already exists.
  Status CreateContainer();

  const AzureOptions& options() const { return options_; }
  const std::string& credential_source() const { return access_.credentials.source; }

  // Implementation types, public so azure_store.cc's and azure_writer.cc's helpers can name them.
  struct Request;
  using Reply = StoreReply;
  // Runs one request with retries. Non-2xx replies become errors naming `what`, except the statuses
  // listed in `accepted`, which come back as replies.
  Result<Reply> Execute(Request& request, const std::vector<long>& accepted = {});
  // The blob name in the container of a key relative to the store's root.
  std::string FullKey(std::string_view key) const;

 private:
  AzureStore(ObjectUri uri, AzureOptions options, AzureAccess access);
  // Replaces the SAS token (and its signature), the key's Base64 form and an access token, wherever a
  // server echoed them, with "[secret]".
  std::string Redact(std::string text) const;

  ObjectUri uri_;
  std::string root_;  // uri_.prefix with a trailing '/', or empty
  AzureOptions options_;
  AzureAccess access_;
  std::string endpoint_path_;  // the endpoint URL's path ("/devstoreaccount1" on azurite, "" on Azure)
  CurlHandlePool handles_;
};

}  // namespace k3::storage
