// Azure Blob XML bodies (azure_xml.h) over the element tree of xml_tree.h.
#include "src/storage/azure_xml.h"

#include <charconv>

#include "src/base/xml_escape.h"
#include "src/storage/percent_encoding.h"
#include "src/storage/s3_xml.h"
#include "src/storage/xml_tree.h"

namespace k3::storage {
namespace {

// A non-negative decimal integer, or DataLoss naming the field.
Result<uint64_t> ParseSize(const std::string& text, std::string_view what, std::string_view field,
                           std::string_view name) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return DataLoss("{}: '{}' has <{}> '{}', expected a non-negative integer", what, name, field, text);
  }
  return value;
}

Result<std::vector<AzureBlock>> ParseBlocks(const XmlElement* parent, std::string_view what) {
  std::vector<AzureBlock> blocks;
  if (parent == nullptr) return blocks;
  for (const auto& child : parent->children) {
    if (child->name != "Block") continue;
    AzureBlock block;
    block.id = child->ChildText("Name");
    if (block.id.empty()) return DataLoss("{}: a <Block> has no <Name>", what);
    K3_ASSIGN_OR_RETURN(block.size, ParseSize(child->ChildText("Size"), what, "Size", block.id));
    blocks.push_back(std::move(block));
  }
  return blocks;
}

}  // namespace

Result<ListBlobsPage> ParseListBlobs(std::string_view xml, std::string_view what) {
  K3_ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> root, ParseXml(xml, what));
  if (root->name != "EnumerationResults") {
    return DataLoss("{}: expected an <EnumerationResults> document, got <{}>", what, root->name);
  }
  ListBlobsPage page;
  page.next_marker = root->ChildText("NextMarker");
  const XmlElement* blobs = root->Child("Blobs");
  if (blobs == nullptr) return page;
  for (const auto& blob : blobs->children) {
    if (blob->name != "Blob") continue;  // <BlobPrefix> only comes with a delimiter
    ObjectInfo info;
    const XmlElement* name = blob->Child("Name");
    if (name == nullptr || name->text.empty()) return DataLoss("{}: a <Blob> entry has no <Name>", what);
    info.key = name->text;
    if (name->Attribute("Encoded") == "true") {
      // Names holding characters XML 1.0 cannot carry come percent-encoded (Encoded="true").
      std::optional<std::string> decoded = PercentDecode(name->text);
      if (!decoded) return DataLoss("{}: a blob name marked Encoded has a bad '%' escape", what);
      info.key = std::move(*decoded);
    }
    const XmlElement* properties = blob->Child("Properties");
    if (properties == nullptr) return DataLoss("{}: blob '{}' has no <Properties>", what, info.key);
    K3_ASSIGN_OR_RETURN(info.size,
                        ParseSize(properties->ChildText("Content-Length"), what, "Content-Length", info.key));
    info.etag = UnquoteEtag(properties->ChildText("Etag"));
    info.last_modified = properties->ChildText("Last-Modified");
    page.objects.push_back(std::move(info));
  }
  return page;
}

Result<AzureBlockList> ParseBlockList(std::string_view xml, std::string_view what) {
  K3_ASSIGN_OR_RETURN(std::unique_ptr<XmlElement> root, ParseXml(xml, what));
  if (root->name != "BlockList") {
    return DataLoss("{}: expected a <BlockList> document, got <{}>", what, root->name);
  }
  AzureBlockList list;
  K3_ASSIGN_OR_RETURN(list.committed, ParseBlocks(root->Child("CommittedBlocks"), what));
  K3_ASSIGN_OR_RETURN(list.uncommitted, ParseBlocks(root->Child("UncommittedBlocks"), what));
  return list;
}

AzureErrorReply ParseAzureError(std::string_view xml) {
  AzureErrorReply reply;
  auto root = ParseXml(xml, "error reply");
  if (!root.ok() || (*root)->name != "Error") return reply;
  reply.code = (*root)->ChildText("Code");
  const std::string& message = (*root)->ChildText("Message");
  reply.message = message.substr(0, message.find('\n'));
  return reply;
}

std::string PutBlockListXml(const std::vector<std::string>& block_ids) {
  std::string out = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
  for (const std::string& id : block_ids) out += "<Latest>" + XmlEscape(id) + "</Latest>";
  out += "</BlockList>";
  return out;
}

}  // namespace k3::storage
