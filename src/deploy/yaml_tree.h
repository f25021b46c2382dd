// YAML / JSON documents as a small tree with line numbers, for `k3 lint` and the tests. Parsing goes
// through yaml-cpp (JSON is read as YAML flow style); every failure is a Status naming file:line, never an
// exception or a crash. Limits guard against hostile input: a small file can nest deeply, or use aliases to
// stand for an exponential tree ("billion laughs": 3 KB of anchors that expand to gigabytes). A counting
// pass over the parser's events measures the tree each document expands to, without expanding it, and
// refuses the file before anything is built; it also stops yaml-cpp 0.7's endless loop on input such as
// "{}," (empty documents at one place forever), which would otherwise fill memory.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace k3::deploy {

struct YamlEntry;  // a mapping entry: {key, value}; defined below (YamlNode is incomplete here)

struct YamlNode {
  enum class Kind { kNull, kScalar, kMap, kSeq, kSentinel };
  Kind kind = Kind::kNull;
  std::string scalar;          // kScalar
  bool quoted = false;         // kScalar written in quotes (always a string)
  int line = 0;                // 1-based
  std::vector<YamlEntry> map;  // kMap, in file order
  std::vector<YamlNode> seq;   // kSeq

  bool IsMap() const { return kind == Kind::kMap; }
  bool IsSeq() const { return kind == Kind::kSeq; }
  bool IsScalar() const { return kind == Kind::kScalar; }
  // Map lookup (nullptr when absent or not a map).
  const YamlNode* Get(const std::string& key) const;
  // Dotted path through maps ("spec.template.spec"); nullptr when any step is missing.
  const YamlNode* Path(const std::string& dotted) const;
  // Scalar text or "" for non-scalars.
  const std::string& Text() const;
  // True for a plain scalar that YAML resolves to an integer.
  bool IsInteger() const;
  bool IsBool() const;
};

struct YamlEntry {
  std::string first;  // key
  YamlNode second;    // value
};

struct YamlDocument {
  std::string file;
  int line = 1;  // first line of the document
  YamlNode root;
};

// Limits on the tree after alias expansion, over all documents of one input; exceeding one is an
// InvalidArgument naming the file, the line and the limit.
struct YamlLimits {
  int max_depth = 200;                // nesting levels, counted through aliases
  size_t max_nodes = 1'000'000;       // nodes (keys, values, items)
  size_t max_alias_nodes = 100'000;   // nodes that aliases stand for (each use of *a counts a's tree)
  size_t max_text_bytes = 64u << 20;  // scalar text; without aliases it is at most the input's size
};

// Parses every document of `text` (multi-document YAML or one JSON value).
Result<std::vector<YamlDocument>> ParseYamlDocuments(const std::string& text, const std::string& file,
                                                     const YamlLimits& limits = {});

// Converts a node to JSON with YAML 1.2 core-schema typing (plain true/false/null/numbers; quoted = string).
nlohmann::json YamlToJson(const YamlNode& node);

}  // namespace k3::deploy
