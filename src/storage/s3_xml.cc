// S3 XML bodies (s3_xml.h) over the element tree of xml_tree.h.
#include "src/storage/s3_xml.h"

#include <charconv>

#include "src/base/xml_escape.h"
#include "src/storage/xml_tree.h"

namespace k3::storage {

std::string UnquoteEtag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

Result<ListObjectsPage> ParseListObjectsV2(std::string_view xml, std::string_view what) {
  K3_ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> root, ParseXml(xml, what));
  if (root->name != "ListBucketResult") {
    return DataLoss("{}: expected a <ListBucketResult> document, got <{}>", what, root->name);
  }
  ListObjectsPage page;
  const std::string& truncated = root->ChildText("IsTruncated");
  if (truncated != "" && truncated != "true" && truncated != "false") {
    return DataLoss("{}: <IsTruncated> is '{}', expected true or false", what, truncated);
  }
  page.truncated = truncated == "true";
  page.next_continuation_token = root->ChildText("NextContinuationToken");
  if (page.truncated && page.next_continuation_token.empty()) {
    return DataLoss("{}: the listing is truncated but has no <NextContinuationToken>", what);
  }
  for (const auto& child : root->children) {
    if (child->name != "Contents") continue;
    ObjectInfo info;
    info.key = child->ChildText("Key");
    if (info.key.empty()) return DataLoss("{}: a <Contents> entry has no <Key>", what);
    const std::string& size = child->ChildText("Size");
    const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), info.size);
    if (size.empty() || ec != std::errc() || end != size.data() + size.size()) {
      return DataLoss("{}: object '{}' has <Size> '{}', expected a non-negative integer", what, info.key,
                      size);
    }
    info.etag = UnquoteEtag(child->ChildText("ETag"));
    info.last_modified = child->ChildText("LastModified");
    page.objects.push_back(std::move(info));
  }
  return page;
}

S3ErrorReply ParseS3Error(std::string_view xml) {
  S3ErrorReply reply;
  auto root = ParseXml(xml, "error reply");
  if (!root.ok() || (*root)->name != "Error") return reply;
  reply.code = (*root)->ChildText("Code");
  reply.message = (*root)->ChildText("Message");
  return reply;
}

Result<std::string> ParseUploadId(std::string_view xml, std::string_view what) {
  K3_ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> root, ParseXml(xml, what));
  const std::string& id = root->ChildText("UploadId");
  if (root->name != "InitiateMultipartUploadResult" || id.empty()) {
    return DataLoss("{}: expected <InitiateMultipartUploadResult> with an <UploadId>", what);
  }
  return id;
}

std::string CompleteMultipartUploadXml(const std::vector<UploadedPart>& parts) {
  std::string out = "<CompleteMultipartUpload>";
  for (const UploadedPart& part : parts) {
    out += "<Part><PartNumber>" + std::to_string(part.number) + "</PartNumber><ETag>" + XmlEscape(part.etag) +
           "</ETag></Part>";
  }
  out += "</CompleteMultipartUpload>";
  return out;
}

}  // namespace k3::storage
