// AzureStore's ObjectWriter: one Put Blob for small objects; for large ones Put Block per block_size
// bytes and Put Block List at Commit(), resumable from the uncommitted blocks Get Block List reports
// (azure_store.h describes the block ids).
#include <map>

#include "src/base/text.h"
#include "src/storage/azure_request.h"
#include "src/storage/azure_shared_key.h"
#include "src/storage/azure_store.h"
#include "src/storage/azure_xml.h"

namespace k3::storage {
namespace {

// Base64("k3-<object size, 16 hex>-<block size, 10 hex>-<index, 6 digits>"): every id of a blob has the
// same length (Azure requires it), and a resumed writer recognises only blocks of the same object size
// and block size.
std::string BlockId(uint64_t expected_size, uint64_t block_size, size_t index) {
  return Base64Encode(fmt::format("k3-{:016x}-{:010x}-{:06d}", expected_size, block_size, index));
}

class AzureWriter : public ObjectWriter {
 public:
  AzureWriter(AzureStore* store, std::string key, uint64_t expected_size)
      : store_(store),
        key_(std::move(key)),
        expected_size_(expected_size),
        block_size_(store->options().block_size) {}

  // Takes over the leading whole blocks an interrupted writer of the same object left uncommitted.
  Status LoadUncommittedBlocks() {
    AzureStore::Request request;
    request.blob = store_->FullKey(key_);
    request.what = store_->Describe(key_) + " (Get Block List)";
    request.query = {{"comp", "blocklist"}, {"blocklisttype", "uncommitted"}};
    K3_ASSIGN_OR_RETURN(AzureStore::Reply reply, store_->Execute(request, {404}));
    if (reply.status == 404) return OkStatus();  // no blob and no blocks: a fresh write
    K3_ASSIGN_OR_RETURN(AzureBlockList list, ParseBlockList(reply.body, request.what));
    std::map<std::string, uint64_t> sizes;
    for (const AzureBlock& block : list.uncommitted) sizes[block.id] = block.size;
    // Bounded by the blocks the object has; the last block always goes up in Commit.
    for (size_t index = 0; (index + 1) * block_size_ < expected_size_; ++index) {
      const std::string id = BlockId(expected_size_, block_size_, index);
      auto it = sizes.find(id);
      if (it == sizes.end() || it->second != block_size_) break;
      block_ids_.push_back(id);
    }
    resume_offset_ = block_ids_.size() * block_size_;
    return OkStatus();
  }

  uint64_t resume_offset() const override { return resume_offset_; }

  Status Append(std::span<const uint8_t> data) override {
    if (committed_) return Internal("{}: write after commit", store_->Describe(key_));
    while (!data.empty()) {
      const size_t take = std::min<size_t>(data.size(), block_size_ - buffer_.size());
      buffer_.insert(buffer_.end(), data.begin(), data.begin() + take);
      data = data.subspan(take);
      // A full block goes up only when more bytes follow (at the latest in Commit), so the last block is
      // never empty and an object of exactly block_size stays one Put Blob.
      if (buffer_.size() == block_size_ && !data.empty()) K3_RETURN_IF_ERROR(UploadBufferedBlock());
    }
    return OkStatus();
  }

  Status Commit() override {
    if (committed_) return Internal("{}: committed twice", store_->Describe(key_));
    if (block_ids_.empty()) {
      AzureStore::Request request;
      request.method = "PUT";
      request.blob = store_->FullKey(key_);
      request.what = store_->Describe(key_);
      request.headers = {{"x-ms-blob-type", "BlockBlob"}};
      request.body = buffer_;
      K3_ASSIGN_OR_RETURN(AzureStore::Reply reply, store_->Execute(request));
      committed_ = true;
      return OkStatus();
    }
    if (!buffer_.empty()) K3_RETURN_IF_ERROR(UploadBufferedBlock());
    const std::string body = PutBlockListXml(block_ids_);
    AzureStore::Request request;
    request.method = "PUT";
    request.blob = store_->FullKey(key_);
    request.what = store_->Describe(key_) + " (Put Block List)";
    request.query = {{"comp", "blocklist"}};
    request.headers = {{"Content-Type", "application/xml"}};
    request.body = AsBytes(body);
    K3_ASSIGN_OR_RETURN(AzureStore::Reply reply, store_->Execute(request));
    committed_ = true;
    return OkStatus();
  }

 private:
  Status UploadBufferedBlock() {
    const size_t index = block_ids_.size();
    const std::string id = BlockId(expected_size_, block_size_, index);
    AzureStore::Request request;
    request.method = "PUT";
    request.blob = store_->FullKey(key_);
    request.what = fmt::format("{} (block {})", store_->Describe(key_), index);
    request.query = {{"comp", "block"}, {"blockid", id}};
    request.body = buffer_;
    K3_ASSIGN_OR_RETURN(AzureStore::Reply reply, store_->Execute(request));
    block_ids_.push_back(id);
    buffer_.clear();
    return OkStatus();
  }

  AzureStore* store_;
  std::string key_;
  uint64_t expected_size_;
  uint64_t block_size_;
  std::vector<uint8_t> buffer_;         // bytes of the block being filled (at most block_size_)
  std::vector<std::string> block_ids_;  // uploaded blocks, in order
  uint64_t resume_offset_ = 0;
  bool committed_ = false;
};

}  // namespace

Result<std::unique_ptr<ObjectWriter>> OpenAzureWriter(AzureStore* store, std::string_view key,
                                                      const WriteOptions& options) {
  if (key.empty() || key.front() == '/') return InvalidArgument("object key '{}' is empty or absolute", key);
  auto writer = std::make_unique<AzureWriter>(store, std::string(key), options.expected_size);
  if (options.resume && options.expected_size > store->options().block_size) {
    K3_RETURN_IF_ERROR(writer->LoadUncommittedBlocks());
  }
  return std::unique_ptr<ObjectWriter>(std::move(writer));
}

}  // namespace k3::storage
