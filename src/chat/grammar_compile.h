// JSON Schema -> grammar nodes (grammar.h), for response_format values and tool-call arguments.
//
// Output policy (what the generated text looks like):
// - No insignificant whitespace anywhere (compact JSON), so the only unbounded parts are strings,
//   arrays and additional properties, and every state has a short way to the end.
// - Object members come in a fixed order: the schema's `properties` in nlohmann::json key order
//   (sorted), then required names that `properties` does not list, then additional properties (keys
//   without escapes, never equal to a declared name). Required members are mandatory, optional ones
//   may be left out, so any subset in that order is possible.
// - Numbers: at most 15 integer and 15 fraction digits and a 2-digit exponent (always a finite double;
//   integers exact); with numeric keywords (number_schema.h) plain notation without an exponent.
//   Strings: every JSON escape, valid UTF-8, surrogate pairs only as pairs.
// - Additional-property keys (additionalProperties, patternProperties) are not checked against each
//   other, so two may repeat a key (minProperties then counts both).
// - enum / const values are written as compact JSON; `type` next to them filters the values, other
//   sibling keywords are not checked against them.
// - oneOf is treated as anyOf (overlapping oneOf branches can yield a value that matches several).
// Errors are InvalidArgument "WHERE: <what> at #/json/pointer".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/chat/grammar.h"

namespace k3::chat::grammar {

// Deepest schema nesting (subschemas inside subschemas) accepted.
inline constexpr int kMaxSchemaNesting = 32;

// Symbols of ordinary text (bytes, no markup).
std::vector<int> TextSymbols(std::string_view text);
// JSON text of a value that never contains an XTML marker name ("<|" and "[EOS]" inside strings are
// written with \u escapes).
std::string MarkerSafeJson(const nlohmann::json& value);

// Whether text contains an XTML marker name (such text cannot be written raw).
bool ContainsMarker(std::string_view text);

class GrammarBuilder {
 public:
  // A JSON value valid against `schema`; $ref resolves within `schema` (the whole document).
  // `where` names the schema in errors (e.g. "response_format.json_schema.schema").
  Result<uint32_t> JsonValue(const nlohmann::json& schema, const std::string& where);
  // Any JSON object (response_format json_object).
  uint32_t AnyJsonObject();
  // The XTML argument blocks of one tool call whose arguments object is valid against `schema`
  // (an object schema; null: any object).
  Result<uint32_t> ToolArguments(const nlohmann::json& schema, const std::string& where);

  uint32_t Literal(std::vector<int> symbols);
  uint32_t Seq(std::vector<uint32_t> children);
  uint32_t Union(std::vector<uint32_t> children);
  uint32_t RawText();
  // Raw text accepted by `dfa` (kRegexRaw), ended by the next markup special; Never when dfa is empty.
  uint32_t RegexText(std::shared_ptr<const regex::ByteDfa> dfa);
  // Exactly one of the texts (a literal set).
  uint32_t LiteralChoices(const std::vector<std::string>& texts);
  uint32_t CallIndex();
  uint32_t CallList(uint32_t call, uint32_t max_calls);

  // Recomputes every node's nesting need (call before asking Satisfiable).
  void UpdateNeeds() { ComputeNeeds(grammar_); }
  bool Satisfiable(uint32_t node) const { return grammar_.nodes[node].need <= kMaxNesting; }
  std::shared_ptr<const Grammar> Finish(uint32_t root);

 private:
  friend class SchemaCompiler;
  uint32_t Add(Node node);
  uint32_t AnyValue();
  uint32_t Never();
  // node restricted to values of one JSON type, with strings as raw text (tool-argument encoding);
  // -1 when the node has no value of that type.
  int64_t Restrict(uint32_t node, std::string_view type);
  uint32_t ArgumentValue(uint32_t value);

  Grammar grammar_;
  int64_t any_value_ = -1;
  int64_t any_object_ = -1;
  int64_t raw_text_ = -1;
  int64_t never_ = -1;
  std::map<std::pair<uint32_t, std::string>, int64_t> restricted_;  // -2: in progress
};

}  // namespace k3::chat::grammar
