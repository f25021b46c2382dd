// Checks a finished JSON value against a JSON Schema: the end check of constrained output for what a
// grammar cannot enforce while generating (`not` over arbitrary subschemas, `uniqueItems` over items that
// are not a small enum), and the grammar's way to tell which enum values a `not` excludes.
//
// Keywords: the subset json_schema_grammar.h compiles, with the meaning JSON Schema (and ajv) gives them:
// boolean schemas, type (lists too; 1.0 is an integer), enum, const (numbers compare by value, 1 == 1.0),
// $ref to a local JSON pointer ("#", "#/$defs/X", ...), allOf, anyOf, oneOf (as anyOf, like the grammar),
// not, properties, required, additionalProperties, patternProperties, minProperties, maxProperties, items
// (a schema, or a draft-7 array with additionalItems), prefixItems, minItems, maxItems, uniqueItems,
// minLength / maxLength (code points), pattern (unanchored, regex_dfa.h), format (the built-in regexes of
// string_schema.h; unknown formats are annotations), minimum, maximum, exclusiveMinimum /
// exclusiveMaximum (numbers or draft-4 booleans), multipleOf (up to a relative 1e-9, so 0.3 is a multiple
// of 0.1). Other keywords are annotations here: the grammar refuses the constraining ones it does not know
// before generation starts. A pattern that does not compile, or a $ref that does not resolve, constrains
// nothing (the grammar has refused the schema already). Nesting is cut at kMaxValidationDepth, and one
// validation checks at most kMaxValidationSteps subschemas ($ref cycles under anyOf / not could branch
// without end): past either limit a subschema counts as holding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace k3::chat {

inline constexpr int kMaxValidationDepth = 128;
inline constexpr int64_t kMaxValidationSteps = 100000;

// The first keyword the value breaks.
struct SchemaViolation {
  std::string keyword;        // "uniqueItems", "not", "minimum", ...
  std::string instance_path;  // JSON pointer into the value ("" is the value itself)
  std::string detail;         // "items 0 and 2 are equal"
  // "uniqueItems: /tags items 0 and 2 are equal" (the value itself is written "/").
  std::string Message() const;
};

// `schema` is the whole schema document ($ref resolves inside it).
std::optional<SchemaViolation> FindSchemaViolation(const nlohmann::json& schema, const nlohmann::json& value);

// The same for a subschema of `document` (`subschema` points into it; $ref resolves in `document`).
std::optional<SchemaViolation> FindSchemaViolation(const nlohmann::json& document,
                                                   const nlohmann::json& subschema,
                                                   const nlohmann::json& value);

}  // namespace k3::chat
