// vLLM guided_regex / guided_choice: constrained plain-text replies. The constrained output has the same
// XTML framing as MakeJsonConstraint (json_schema_grammar.h), with TEXT in place of the JSON VALUE:
//   [reasoning text]<|close|>think<|sep|><|open|>response<|sep|>   (only with allow_reasoning)
//   TEXT<|close|>response<|sep|><|close|>message<|sep|>            then one of options.end_ids
// MakeRegexConstraint: TEXT fully matches `pattern` (regex_parse.h subset; ^ / $ at the ends are no-ops,
//   as in xgrammar), and never spells an XTML marker name (texts that would are not generated).
// MakeChoiceConstraint: TEXT is exactly one of `choices` (raw, not JSON-quoted); a choice containing an
//   XTML marker name, or an empty list, is an InvalidArgument.
// max_tokens budgeting works as for JSON (the shortest completion through the regex automaton).
// Both are defined in json_schema_grammar.cc, next to the constraint they build.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/chat/json_schema_grammar.h"
#include "src/chat/token_constraint.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::chat {

Result<std::unique_ptr<TokenConstraint>> MakeRegexConstraint(const tokenizer::Tokenizer& tokenizer,
                                                             const std::string& pattern,
                                                             const ConstraintOptions& options);

Result<std::unique_ptr<TokenConstraint>> MakeChoiceConstraint(const tokenizer::Tokenizer& tokenizer,
                                                              const std::vector<std::string>& choices,
                                                              const ConstraintOptions& options);

}  // namespace k3::chat
