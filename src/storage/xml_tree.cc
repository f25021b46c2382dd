// ParseXml over expat's streaming callbacks (xml_tree.h).
#include "src/storage/xml_tree.h"

#include <expat.h>

#include <limits>

namespace k3::storage {
namespace {

struct Builder {
  std::unique_ptr<XmlElement> root;
  std::vector<XmlElement*> stack;
  size_t elements = 0;
  std::string error;  // set when a limit is hit (the parser is stopped)
  XML_Parser parser = nullptr;
};

void Stop(Builder* b, std::string message) {
  if (b->error.empty()) b->error = std::move(message);
  XML_StopParser(b->parser, XML_FALSE);
}

void OnStart(void* user, const XML_Char* name, const XML_Char** attributes) {
  auto* b = static_cast<Builder*>(user);
  if (!b->error.empty()) return;
  if (b->stack.size() >= static_cast<size_t>(kMaxXmlDepth)) {
    return Stop(b, "elements nested deeper than " + std::to_string(kMaxXmlDepth));
  }
  if (++b->elements > kMaxXmlElements)
    return Stop(b, "more than " + std::to_string(kMaxXmlElements) + " elements");
  auto element = std::make_unique<XmlElement>();
  element->name = name;
  for (const XML_Char** a = attributes; a != nullptr && a[0] != nullptr && a[1] != nullptr; a += 2) {
    element->attributes.emplace_back(a[0], a[1]);
  }
  XmlElement* raw = element.get();
  if (b->stack.empty()) {
    b->root = std::move(element);
  } else {
    b->stack.back()->children.push_back(std::move(element));
  }
  b->stack.push_back(raw);
}

void OnEnd(void* user, const XML_Char* /*name*/) {
  auto* b = static_cast<Builder*>(user);
  if (!b->stack.empty()) b->stack.pop_back();
}

void OnText(void* user, const XML_Char* text, int length) {
  auto* b = static_cast<Builder*>(user);
  if (!b->stack.empty() && length > 0) b->stack.back()->text.append(text, static_cast<size_t>(length));
}

}  // namespace

const XmlElement* XmlElement::Child(std::string_view child_name) const {
  for (const auto& child : children) {
    if (child->name == child_name) return child.get();
  }
  return nullptr;
}

std::string_view XmlElement::Attribute(std::string_view attribute) const {
  for (const auto& [key, value] : attributes) {
    if (key == attribute) return value;
  }
  return {};
}

const std::string& XmlElement::ChildText(std::string_view child_name) const {
  static const std::string kEmpty;
  const XmlElement* child = Child(child_name);
  return child == nullptr ? kEmpty : child->text;
}

Result<std::unique_ptr<XmlElement>> ParseXml(std::string_view xml, std::string_view what) {
  if (xml.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return DataLoss("{}: {}-byte XML body is too large", what, xml.size());
  }
  Builder builder;
  XML_Parser parser = XML_ParserCreate(nullptr);
  if (parser == nullptr) return Internal("{}: cannot create an XML parser", what);
  builder.parser = parser;
  XML_SetUserData(parser, &builder);
  XML_SetElementHandler(parser, OnStart, OnEnd);
  XML_SetCharacterDataHandler(parser, OnText);
  const XML_Status status = XML_Parse(parser, xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  std::string error;
  if (!builder.error.empty()) {
    error = builder.error;
  } else if (status != XML_STATUS_OK) {
    error = std::string(XML_ErrorString(XML_GetErrorCode(parser))) + " at line " +
            std::to_string(XML_GetCurrentLineNumber(parser));
  }
  XML_ParserFree(parser);
  if (!error.empty()) return DataLoss("{}: malformed XML ({})", what, error);
  if (builder.root == nullptr) return DataLoss("{}: no XML element in the body", what);
  return std::move(builder.root);
}

}  // namespace k3::storage
