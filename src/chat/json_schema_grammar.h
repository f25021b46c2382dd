// Structured output: JSON Schema -> a grammar over the tokenizer's vocabulary, exposed as TokenConstraint.
//
// Supported schema keywords: type (object, array, string, number, integer, boolean, null, and lists of
// types), properties, required, additionalProperties (bool or schema), items, enum, const, anyOf, oneOf
// (treated as anyOf), $ref into #/$defs (and #/definitions), minItems / maxItems where small. Anything
// else is ignored (accepted as annotation) unless it would make the grammar unsound, which is an
// InvalidArgument naming the keyword and its JSON pointer. Nesting deeper than kMaxSchemaDepth is an
// error. Strings allow every JSON escape; the generated text is always valid JSON for the schema.
//
// With allow_reasoning, the output may first contain the model's reasoning section (spec §4: free text up
// to the reasoning end marker) before the constrained part; without it the constrained part starts at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/chat/token_constraint.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::chat {

inline constexpr int kMaxSchemaDepth = 32;

struct ConstraintOptions {
  std::vector<int32_t> end_ids;   // allowed once the value is complete (e.g. <|end_of_msg|>)
  bool allow_reasoning = false;   // thinking on: a reasoning section may come first
};

// response_format json_schema (schema) or json_object (schema null: any JSON object).
// The tokenizer must outlive the constraint.
Result<std::unique_ptr<TokenConstraint>> MakeJsonConstraint(const tokenizer::Tokenizer& tokenizer,
                                                            const nlohmann::json& schema,
                                                            const ConstraintOptions& options);

// tool_choice "required" (function_name empty: any of `tools`) or named (that function): the output is the
// XTML tool-call section (spec §4) with one call (or several when parallel_tool_calls) whose arguments
// are valid against the function's `parameters` schema. `tools` is the request's OpenAI tools array.
Result<std::unique_ptr<TokenConstraint>> MakeToolCallConstraint(const tokenizer::Tokenizer& tokenizer,
                                                                const nlohmann::json& tools,
                                                                const std::string& function_name,
                                                                bool parallel_tool_calls,
                                                                const ConstraintOptions& options);

}  // namespace k3::chat
