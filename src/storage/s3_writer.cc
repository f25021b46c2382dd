// S3Store's ObjectWriter: one PUT for small objects, a resumable multipart upload for large ones
// (s3_store.h describes the journal).
#include <nlohmann/json.hpp>

#include "src/base/text.h"
#include "src/storage/s3_request.h"
#include "src/storage/s3_store.h"
#include "src/storage/s3_xml.h"

namespace k3::storage {
namespace {

using json = nlohmann::json;

class S3Writer : public ObjectWriter {
 public:
  S3Writer(S3Store* store, std::string key, uint64_t expected_size)
      : store_(store),
        key_(std::move(key)),
        expected_size_(expected_size),
        part_size_(store->options().part_size) {}

  // Loads the journal of an interrupted upload of the same object size and part size, if any.
  Status LoadJournal() {
    auto text = store_->ReadAll(JournalKey());
    if (!text.ok()) return text.status().code() == StatusCode::kNotFound ? OkStatus() : text.status();
    const json journal = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!journal.is_object() || !journal.contains("upload_id") || !journal["upload_id"].is_string() ||
        journal.value("part_size", uint64_t{0}) != part_size_ ||
        journal.value("expected_size", uint64_t{0}) != expected_size_ || !journal["parts"].is_array()) {
      return OkStatus();  // another object's or a damaged journal: start over (it is overwritten)
    }
    std::vector<UploadedPart> parts;
    for (const json& part : journal["parts"]) {
      if (!part.is_object() || !part["number"].is_number_integer() || !part["etag"].is_string())
        return OkStatus();
      const int number = part["number"].get<int>();
      if (number != static_cast<int>(parts.size()) + 1) return OkStatus();
      parts.push_back(UploadedPart{number, part["etag"].get<std::string>()});
    }
    if (parts.size() * part_size_ >= expected_size_)
      return OkStatus();  // the last part always goes in Commit
    upload_id_ = journal["upload_id"].get<std::string>();
    parts_ = std::move(parts);
    resume_offset_ = parts_.size() * part_size_;
    return OkStatus();
  }

  uint64_t resume_offset() const override { return resume_offset_; }

  Status Append(std::span<const uint8_t> data) override {
    if (committed_) return Internal("{}: write after commit", store_->Describe(key_));
    while (!data.empty()) {
      const size_t take = std::min<size_t>(data.size(), part_size_ - buffer_.size());
      buffer_.insert(buffer_.end(), data.begin(), data.begin() + take);
      data = data.subspan(take);
      // A full part goes up only when more bytes follow (at the latest in Commit), so the last part is
      // never empty and an object of exactly part_size stays one PUT.
      if (buffer_.size() == part_size_ && !data.empty()) K3_RETURN_IF_ERROR(UploadBufferedPart());
    }
    return OkStatus();
  }

  Status Commit() override {
    if (committed_) return Internal("{}: committed twice", store_->Describe(key_));
    if (upload_id_.empty()) {
      S3Store::Request request;
      request.method = "PUT";
      request.full_key = store_->FullKey(key_);
      request.what = store_->Describe(key_);
      request.body = buffer_;
      K3_ASSIGN_OR_RETURN(S3Store::Reply reply, store_->Execute(request));
      committed_ = true;
      return OkStatus();
    }
    if (!buffer_.empty()) K3_RETURN_IF_ERROR(UploadBufferedPart());
    const std::string body = CompleteMultipartUploadXml(parts_);
    S3Store::Request request;
    request.method = "POST";
    request.full_key = store_->FullKey(key_);
    request.what = store_->Describe(key_);
    request.query = {{"uploadId", upload_id_}};
    request.body = AsBytes(body);
    request.content_type = "application/xml";
    auto completed = store_->Execute(request);
    if (!completed.ok()) return ForgetLostUpload(completed.status());
    const S3Store::Reply& reply = *completed;
    // S3 can answer 200 with an <Error> body when completing fails late.
    if (reply.body.find("<Error>") != std::string::npos) {
      const S3ErrorReply error = ParseS3Error(reply.body);
      return IoError("{}: completing the multipart upload failed: {} {} (credentials: {})", request.what,
                     error.code, error.message, store_->credential_source());
    }
    committed_ = true;
    return store_->Delete(JournalKey());
  }

 private:
  std::string JournalKey() const { return key_ + std::string(kUploadJournalSuffix); }

  // A 404 on an upload's part or completion means the upload is gone (aborted, or expired by a lifecycle
  // rule): the journal would point every later run at it, so it is removed and the next run starts over.
  Status ForgetLostUpload(const Status& error) {
    if (error.code() != StatusCode::kNotFound) return error;
    const Status removed = store_->Delete(JournalKey());
    return Status(
        StatusCode::kIoError,
        fmt::format("{}; the multipart upload no longer exists, {} -- run again to start this "
                    "object over",
                    error.message(),
                    removed.ok() ? "its journal was removed" : "and its journal could not be removed"));
  }

  Status StartUpload() {
    S3Store::Request request;
    request.method = "POST";
    request.full_key = store_->FullKey(key_);
    request.what = store_->Describe(key_);
    request.query = {{"uploads", ""}};
    K3_ASSIGN_OR_RETURN(S3Store::Reply reply, store_->Execute(request));
    K3_ASSIGN_OR_RETURN(upload_id_,
                        ParseUploadId(reply.body, "CreateMultipartUpload reply for " + request.what));
    return OkStatus();
  }

  Status UploadBufferedPart() {
    if (upload_id_.empty()) K3_RETURN_IF_ERROR(StartUpload());
    const int number = static_cast<int>(parts_.size()) + 1;
    S3Store::Request request;
    request.method = "PUT";
    request.full_key = store_->FullKey(key_);
    request.what = fmt::format("{} (part {})", store_->Describe(key_), number);
    request.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id_}};
    request.body = buffer_;
    auto uploaded = store_->Execute(request);
    if (!uploaded.ok()) return ForgetLostUpload(uploaded.status());
    const S3Store::Reply& reply = *uploaded;
    if (reply.etag.empty()) return DataLoss("{}: the store returned no ETag for the part", request.what);
    parts_.push_back(UploadedPart{number, "\"" + reply.etag + "\""});
    buffer_.clear();
    return WriteJournal();
  }

  Status WriteJournal() {
    json parts = json::array();
    for (const UploadedPart& part : parts_) parts.push_back({{"number", part.number}, {"etag", part.etag}});
    const json journal = {{"upload_id", upload_id_},
                          {"part_size", part_size_},
                          {"expected_size", expected_size_},
                          {"parts", std::move(parts)}};
    // One PUT, never a writer of its own: a journal larger than part_size must not start a multipart
    // upload (with a journal of its own).
    const std::string text = journal.dump();
    S3Store::Request request;
    request.method = "PUT";
    request.full_key = store_->FullKey(JournalKey());
    request.what = store_->Describe(JournalKey());
    request.body = AsBytes(text);
    K3_ASSIGN_OR_RETURN(S3Store::Reply reply, store_->Execute(request));
    return OkStatus();
  }

  S3Store* store_;
  std::string key_;
  uint64_t expected_size_;
  uint64_t part_size_;
  std::vector<uint8_t> buffer_;  // bytes of the part being filled (at most part_size_)
  std::string upload_id_;        // set once the multipart upload exists
  std::vector<UploadedPart> parts_;
  uint64_t resume_offset_ = 0;
  bool committed_ = false;
};

}  // namespace

Result<std::unique_ptr<ObjectWriter>> OpenS3Writer(S3Store* store, std::string_view key,
                                                   const WriteOptions& options) {
  if (key.empty() || key.front() == '/') return InvalidArgument("object key '{}' is empty or absolute", key);
  auto writer = std::make_unique<S3Writer>(store, std::string(key), options.expected_size);
  if (options.resume && options.expected_size > store->options().part_size) {
    K3_RETURN_IF_ERROR(writer->LoadJournal());
  }
  return std::unique_ptr<ObjectWriter>(std::move(writer));
}

}  // namespace k3::storage
