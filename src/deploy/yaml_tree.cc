// yaml-cpp -> YamlNode conversion with limits (see yaml_tree.h).
#include "src/deploy/yaml_tree.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace k3::deploy {
namespace {

// Stops the counting pass at the first limit exceeded.
struct LimitExceeded {
  Status status;
};

// Counting pass over the parser's events, run before YAML::LoadAll builds yaml-cpp's node graph (where an
// alias shares its anchor's node; Converter copies it). For every node it adds up what the node expands
// to: nodes, scalar bytes and height, with an alias counting its anchor's totals. Work and memory are
// linear in the input, and the totals are exactly what Converter would build.
class ExpansionCounter : public YAML::EventHandler {
 public:
  ExpansionCounter(const YamlLimits& limits, const std::string& file) : limits_(limits), file_(file) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    // yaml-cpp 0.7 never gets past a flow collection followed by a comma at document level ("{},"): it
    // reports empty documents at the same place forever, and YAML::LoadAll collects them until memory runs
    // out. A document that starts where the previous one started consumed nothing, so the next would too.
    if (mark.pos == last_document_pos_) {
      Fail(mark, fmt::format("malformed YAML: the parser is stuck at column {} (a ',' after a flow "
                             "collection at document level?)",
                             mark.column + 1));
    }
    last_document_pos_ = mark.pos;
    anchors_.clear();  // anchor ids restart in every document
    names_.clear();
  }
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { pending_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, 0); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(mark, anchor, value.size());
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      // yaml-cpp registers an anchor when its node starts, so this is an alias inside its own anchor.
      Fail(mark, fmt::format("alias *{} refers to a node that contains it (a cycle)", Name(anchor)));
    }
    const Size& size = it->second;
    alias_nodes_ += size.nodes;
    if (alias_nodes_ > limits_.max_alias_nodes) {
      Fail(mark,
           fmt::format("aliases (here *{}) expand to more than {} nodes, the limit for aliases; refusing "
                       "to lint (an alias bomb?)",
                       Name(anchor), limits_.max_alias_nodes));
    }
    CheckDepth(mark, stack_.size() + size.height - 1);
    Count(mark, size);
    AddToParent(size);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Size {
    uint64_t nodes = 0;
    uint64_t bytes = 0;
    uint64_t height = 0;  // 1 for a leaf
  };
  struct OpenNode {
    YAML::anchor_t anchor;
    Size size;
  };

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, size_t bytes) {
    const Size size{1, bytes, 1};
    NameAnchor(anchor);
    CheckDepth(mark, stack_.size());
    if (anchor != YAML::NullAnchor) anchors_[anchor] = size;
    Count(mark, size);
    AddToParent(size);
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    NameAnchor(anchor);
    CheckDepth(mark, stack_.size());
    Count(mark, Size{1, 0, 1});  // the container itself; its children are added to it as they finish
    stack_.push_back({anchor, Size{1, 0, 1}});
  }
  void Close() {
    const OpenNode node = stack_.back();
    stack_.pop_back();
    if (node.anchor != YAML::NullAnchor) anchors_[node.anchor] = node.size;
    AddToParent(node.size);
  }
  // Depth as Converter counts it: the document's root is at 0.
  void CheckDepth(const YAML::Mark& mark, uint64_t depth) const {
    if (depth > static_cast<uint64_t>(limits_.max_depth)) {
      Fail(mark, fmt::format("nesting deeper than {} levels (after alias expansion)", limits_.max_depth));
    }
  }
  // Adds to the running totals over the whole input and checks them.
  void Count(const YAML::Mark& mark, const Size& size) {
    total_nodes_ += size.nodes;
    total_bytes_ += size.bytes;
    if (total_nodes_ > limits_.max_nodes) {
      Fail(mark,
           fmt::format("more than {} nodes (after alias expansion); refusing to lint", limits_.max_nodes));
    }
    if (total_bytes_ > limits_.max_text_bytes) {
      Fail(mark, fmt::format("more than {} MiB of text (after alias expansion); refusing to lint",
                             limits_.max_text_bytes >> 20));
    }
  }
  // Adds a finished node (or an alias's expansion) to the enclosing node's size.
  void AddToParent(const Size& size) {
    if (stack_.empty()) return;
    Size& parent = stack_.back().size;
    parent.nodes += size.nodes;
    parent.bytes += size.bytes;
    parent.height = std::max(parent.height, size.height + 1);
  }
  void NameAnchor(YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) names_[anchor] = pending_name_;
    pending_name_.clear();
  }
  std::string Name(YAML::anchor_t anchor) const {
    auto it = names_.find(anchor);
    return it != names_.end() && !it->second.empty() ? it->second : "?";
  }
  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& what) const {
    throw LimitExceeded{InvalidArgument("{}:{}: {}", file_, mark.is_null() ? 0 : mark.line + 1, what)};
  }

  const YamlLimits& limits_;
  const std::string& file_;
  std::vector<OpenNode> stack_;
  std::unordered_map<YAML::anchor_t, Size> anchors_;  // finished anchored nodes of this document
  std::unordered_map<YAML::anchor_t, std::string> names_;
  std::string pending_name_;
  uint64_t total_nodes_ = 0;
  uint64_t total_bytes_ = 0;
  uint64_t alias_nodes_ = 0;
  int last_document_pos_ = -1;
};

class Converter {
 public:
  Converter(const YamlLimits& limits, std::string file) : limits_(limits), file_(std::move(file)) {}

  Status Convert(const YAML::Node& in, YamlNode& out, int depth) {
    if (++nodes_ > limits_.max_nodes) {
      return InvalidArgument("{}: more than {} nodes (alias expansion?); refusing to lint", file_,
                             limits_.max_nodes);
    }
    if (depth > limits_.max_depth) {
      return InvalidArgument("{}:{}: nesting deeper than {} levels", file_, in.Mark().line + 1,
                             limits_.max_depth);
    }
    out.line = in.Mark().is_null() ? 0 : in.Mark().line + 1;
    switch (in.Type()) {
      case YAML::NodeType::Scalar:
        out.kind = YamlNode::Kind::kScalar;
        out.scalar = in.Scalar();
        out.quoted = in.Tag() == "!";
        return OkStatus();
      case YAML::NodeType::Sequence:
        out.kind = YamlNode::Kind::kSeq;
        for (const YAML::Node& item : in) {
          out.seq.emplace_back();
          K3_RETURN_IF_ERROR(Convert(item, out.seq.back(), depth + 1));
        }
        return OkStatus();
      case YAML::NodeType::Map:
        out.kind = YamlNode::Kind::kMap;
        for (const auto& kv : in) {
          YamlNode key;
          K3_RETURN_IF_ERROR(Convert(kv.first, key, depth + 1));
          if (!key.IsScalar()) {
            return InvalidArgument("{}:{}: a mapping key must be a scalar", file_, key.line);
          }
          out.map.push_back(YamlEntry{key.scalar, YamlNode()});
          K3_RETURN_IF_ERROR(Convert(kv.second, out.map.back().second, depth + 1));
          // Findings about a mapping or list value point at its key ("startupProbe:"), not its first child.
          YamlNode& value = out.map.back().second;
          if (value.line == 0 || value.IsMap() || value.IsSeq()) value.line = key.line;
        }
        return OkStatus();
      default:
        out.kind = YamlNode::Kind::kNull;
        return OkStatus();
    }
  }

 private:
  YamlLimits limits_;
  std::string file_;
  size_t nodes_ = 0;
};

bool IsIntegerText(const std::string& s) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

bool IsFloatText(const std::string& s) {
  if (s.empty() || IsIntegerText(s)) return false;
  bool digit = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (c != '.' && c != 'e' && c != 'E' && c != '-' && c != '+') {
      return false;
    }
  }
  if (!digit) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

}  // namespace

const YamlNode* YamlNode::Get(const std::string& key) const {
  if (kind != Kind::kMap) return nullptr;
  for (const auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

const YamlNode* YamlNode::Path(const std::string& dotted) const {
  const YamlNode* node = this;
  size_t start = 0;
  while (node != nullptr && start <= dotted.size()) {
    size_t end = dotted.find('.', start);
    if (end == std::string::npos) end = dotted.size();
    node = node->Get(dotted.substr(start, end - start));
    start = end + 1;
  }
  return node;
}

const std::string& YamlNode::Text() const {
  static const std::string kEmpty;
  return kind == Kind::kScalar ? scalar : kEmpty;
}

bool YamlNode::IsInteger() const { return kind == Kind::kScalar && !quoted && IsIntegerText(scalar); }

bool YamlNode::IsBool() const {
  return kind == Kind::kScalar && !quoted && (scalar == "true" || scalar == "false");
}

Result<std::vector<YamlDocument>> ParseYamlDocuments(const std::string& text, const std::string& file,
                                                     const YamlLimits& limits) {
  std::vector<YAML::Node> nodes;
  try {
    {
      // Measure first (ExpansionCounter): LoadAll itself never stops on some malformed input, and
      // Converter copies an anchor's tree for every alias.
      std::istringstream in(text);
      YAML::Parser parser(in);
      ExpansionCounter counter(limits, file);
      while (parser.HandleNextDocument(counter)) {
      }
    }
    nodes = YAML::LoadAll(text);
  } catch (const LimitExceeded& e) {
    return e.status;
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    return InvalidArgument("{}:{}: malformed YAML: {}", file, line, e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument("{}: malformed YAML: {}", file, e.what());
  }
  std::vector<YamlDocument> docs;
  Converter converter(limits, file);
  for (const YAML::Node& node : nodes) {
    if (!node.IsDefined() || node.IsNull()) continue;  // an empty document between "---" lines
    YamlDocument doc;
    doc.file = file;
    try {
      K3_RETURN_IF_ERROR(converter.Convert(node, doc.root, 0));
    } catch (const std::exception& e) {
      return InvalidArgument("{}: unreadable YAML node: {}", file, e.what());
    }
    doc.line = doc.root.line;
    docs.push_back(std::move(doc));
  }
  return docs;
}

nlohmann::json YamlToJson(const YamlNode& node) {
  switch (node.kind) {
    case YamlNode::Kind::kScalar: {
      const std::string& s = node.scalar;
      if (node.quoted) return s;
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
      if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) return nullptr;
      if (IsIntegerText(s) && s.size() < 19) return std::stoll(s);
      if (IsFloatText(s)) return std::strtod(s.c_str(), nullptr);
      return s;
    }
    case YamlNode::Kind::kMap: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [k, v] : node.map) out[k] = YamlToJson(v);
      return out;
    }
    case YamlNode::Kind::kSeq: {
      nlohmann::json out = nlohmann::json::array();
      for (const YamlNode& item : node.seq) out.push_back(YamlToJson(item));
      return out;
    }
    default:
      return nullptr;
  }
}

}  // namespace k3::deploy
