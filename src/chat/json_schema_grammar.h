// Structured output: JSON Schema -> a grammar over the tokenizer's vocabulary, exposed as TokenConstraint.
//
// Supported schema keywords: type (object, array, string, number, integer, boolean, null, and lists of
// types), properties, required, additionalProperties (bool or schema), items, enum, const, anyOf, oneOf
// (treated as anyOf), $ref into #/$defs (and #/definitions, or any local JSON pointer), allOf with one
// subschema, minItems / maxItems, prefixItems (and draft-7 items arrays with additionalItems), for
// strings pattern, format, minLength, maxLength (string_schema.h: `pattern` is unanchored as the spec
// says; formats date-time, date, time, email, uuid, ipv4, ipv6, uri and hostname are built-in regexes
// accepting a valid subset, other formats are annotations; lengths count code points; such strings are
// generated without escapes), for numbers minimum, maximum, exclusiveMinimum, exclusiveMaximum and
// multipleOf (number_schema.h: exact, bounded numbers in plain decimal notation), for objects
// minProperties, maxProperties and patternProperties (object_keys.h: a key matches one pattern only;
// without additionalProperties beside them only pattern keys are written), uniqueItems (enforced for
// items that are an enum / const / boolean of at most 32 values), not (enforced when its subschema is
// only a type, and beside a finite value set, whose values it matches are dropped; its subschema may use
// the keywords listed here). What the grammar cannot enforce (uniqueItems over other items, any other
// `not`) compiles and is left to the end check of output_schema_check.h. Anything
// else is ignored (accepted as annotation) unless it would make the grammar unsound, which is an
// InvalidArgument naming the keyword and its JSON pointer. Nesting deeper than kMaxSchemaDepth is an
// error. Strings allow every JSON escape; the generated text is always valid JSON for the schema.
//
// With allow_reasoning, the output may first contain the model's reasoning section (spec §4: free text up
// to the reasoning end marker) before the constrained part; without it the constrained part starts at once.
//
// With max_tokens, the output fits the budget whatever the model prefers (a forced tool call appears
// even with random weights): the reasoning may take at most max_tokens / 2 tokens (and those finishing a
// multi-byte character), after which only the think close is allowed; and a token is allowed only if
// the shortest completion after it (in tokens, grammar_distance.h) and the end id still fit, so strings,
// arrays and free text are closed in time. When even the shortest output does not fit, the budget is
// dropped and the grammar alone applies (the engine then stops at max_tokens: finish_reason "length").
//
// What the constrained output is, exactly (parsed by chat::ParseOutput as spec §4.4 says):
//   [reasoning text]<|close|>think<|sep|><|open|>response<|sep|>   (only with allow_reasoning)
//   JSON:  VALUE<|close|>response<|sep|><|close|>message<|sep|>     then one of end_ids
//   tools: <|close|>response<|sep|><|open|>tools<|sep|>CALL...<|close|>tools<|sep|><|close|>message<|sep|>
//          CALL = <|open|>call tool="NAME" index="N"<|sep|>ARGS<|close|>call<|sep|>, N = 1, 2, ... (at most
//          32 calls with parallel_tool_calls, else exactly one); ARGS = one
//          <|open|>argument key="K" type="T"<|sep|>VALUE<|close|>argument<|sep|> per argument (strings raw,
//          other types as JSON), the encoding the renderer writes.
// Reasoning and strings are free text (valid UTF-8) that never spells an XTML marker name; special tokens
// appear only as the markup above. VALUE has no insignificant whitespace; object members follow the
// schema's property order (sorted by name), required ones mandatory; see grammar_compile.h for the full
// output policy (number digit limits, additional-property keys). end_ids must be non-empty.
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
  std::vector<int32_t> end_ids;  // allowed once the value is complete (e.g. <|end_of_msg|>)
  bool allow_reasoning = false;  // thinking on: a reasoning section may come first
  int64_t max_tokens = 0;        // the output's token budget, end id included (0: none); see below
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
