// A small element tree parsed from untrusted XML with expat (libexpat1-dev): enough for the S3-style
// XML bodies of object stores (listings, errors, multipart uploads). Namespaces are not processed: an
// element's name is what the document spells ("ListBucketResult"). Attributes are dropped.
//
// Limits (bad input is an error, never a crash): nesting depth kMaxXmlDepth, kMaxXmlElements elements.
// Expat's own defences against entity expansion (billion laughs) stay on.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::storage {

inline constexpr int kMaxXmlDepth = 64;
inline constexpr size_t kMaxXmlElements = 1'000'000;

struct XmlElement {
  std::string name;
  std::string text;  // character data directly inside this element (concatenated)
  std::vector<std::pair<std::string, std::string>> attributes;  // in document order
  std::vector<std::unique_ptr<XmlElement>> children;

  // The value of attribute `name`, or "" when it has none.
  std::string_view Attribute(std::string_view name) const;

  // The first child named `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
  // The text of the first child named `name`, or "" when there is none.
  const std::string& ChildText(std::string_view name) const;
};

// `what` names the document in errors ("ListObjectsV2 reply from s3://bucket").
Result<std::unique_ptr<XmlElement>> ParseXml(std::string_view xml, std::string_view what);

}  // namespace k3::storage
