// The XML bodies of the Azure Blob REST API that AzureStore reads: List Blobs pages, Get Block List
// replies and error replies; and the Put Block List body it writes. Inputs are untrusted
// (fuzz/fuzz_azure_list_xml.cc): a malformed body is DataLoss naming the request, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/storage/object_store.h"

namespace k3::storage {

struct ListBlobsPage {
  std::vector<ObjectInfo> objects;  // names as the container has them (the caller strips its prefix)
  std::string next_marker;          // empty on the last page
};

// <EnumerationResults><Blobs><Blob><Name/><Properties><Content-Length/><Etag/><Last-Modified/>...
Result<ListBlobsPage> ParseListBlobs(std::string_view xml, std::string_view what);

struct AzureBlock {
  std::string id;  // Base64, as the service returns it
  uint64_t size = 0;
};
struct AzureBlockList {
  std::vector<AzureBlock> committed;
  std::vector<AzureBlock> uncommitted;
};
// <BlockList><CommittedBlocks><Block><Name/><Size/></Block>...<UncommittedBlocks>...
Result<AzureBlockList> ParseBlockList(std::string_view xml, std::string_view what);

struct AzureErrorReply {
  std::string code;     // "AuthenticationFailed", "BlobNotFound", "ServerBusy"; empty when absent
  std::string message;  // the server's words (first line only: later lines are request ids and times)
};
// Never fails: a body that is not an Azure <Error> gives empty fields.
AzureErrorReply ParseAzureError(std::string_view xml);

// <?xml ...?><BlockList><Latest>ID</Latest>...</BlockList>, the ids in order.
std::string PutBlockListXml(const std::vector<std::string>& block_ids);

}  // namespace k3::storage
