// yaml-cpp -> YamlNode conversion with limits (see yaml_tree.h).
#include "src/deploy/yaml_tree.h"

#include <cctype>
#include <cstdlib>

#include <yaml-cpp/yaml.h>

namespace k3::deploy {
namespace {

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
    nodes = YAML::LoadAll(text);
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
