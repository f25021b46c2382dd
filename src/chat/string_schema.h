// JSON Schema string keywords -> the byte DFA of a kRegex string node (grammar.h): `pattern` (ECMA-262
// subset, regex_parse.h; unanchored as the spec says, so "abc" means "contains abc"), `format`
// (date-time, date, time, email, uuid, ipv4, ipv6, uri, hostname as built-in regexes that accept a
// subset of each format: generation stays within valid values), `minLength` / `maxLength` (code points).
// All given keywords are intersected; the result is also restricted to text a JSON string holds without
// escapes and that never spells an XTML marker name (grammar_marker_filter.h).
//
// Length policy: a maxLength above kMaxGeneratedStringChars (or none) is generated as at most
// max(minLength, kMaxGeneratedStringChars) code points when minLength or maxLength is given, so the
// automaton stays small; every generated value still satisfies both bounds.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/chat/regex_dfa.h"

namespace k3::chat::grammar {

inline constexpr uint32_t kMaxGeneratedStringChars = 64;
inline constexpr uint32_t kMaxStringDfaStates = 16384;

// Whether the schema has string keywords that need a kRegex node (pattern, a known format, minLength,
// maxLength).
bool HasStringKeywords(const nlohmann::json& schema);

// The string DFA for `schema` at JSON pointer `ptr` (errors name the keyword and pointer). An empty DFA
// (Empty()) means no string can be generated.
Result<std::shared_ptr<const regex::ByteDfa>> CompileStringKeywords(const nlohmann::json& schema,
                                                                    const std::string& ptr);

// The built-in regex (full match, JSON-safe) of a supported `format`, or "" when it is not one.
std::string FormatRegex(const std::string& format);

// A regex compiled for constrained text: marker-filtered, and with json_safe also free of bytes a JSON
// string cannot hold raw (the pieces above use that; guided_regex text does not). `what` names the
// source in errors.
Result<regex::ByteDfa> CompileConstrainedRegex(const std::string& pattern, bool full_match,
                                               const std::string& what, bool json_safe = true);

}  // namespace k3::chat::grammar
