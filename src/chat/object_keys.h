// Key automata for objects with patternProperties (grammar_compile.h): the keys a pattern member may
// have, and the keys of additional members beside the patterns, as kRegex string DFAs (string_schema.h).
//
// A pattern key matches its pattern (unanchored, as the spec says), matches none of the other patterns
// (so its value only has to satisfy its own schema), and differs from every declared property name. An
// additional key matches no pattern and differs from every declared name. In args mode (tool-call
// arguments, written as XTML attribute values) keys also avoid '&' and '<'.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/chat/grammar.h"
#include "src/chat/regex_dfa.h"

namespace k3::chat::grammar {

// `patterns` are the patternProperties keys; `which` the one the key must match, or -1 for an
// additional key. `what` names the keyword in errors (e.g. "patternProperties at #/x").
Result<std::shared_ptr<const regex::ByteDfa>> ObjectKeyDfa(const std::vector<std::string>& patterns,
                                                           int which, const SymbolTrie& declared_names,
                                                           bool attribute, const std::string& what);

}  // namespace k3::chat::grammar
