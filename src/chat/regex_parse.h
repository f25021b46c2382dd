// Parses the ECMA-262 regular-expression subset that JSON Schema `pattern` (and vLLM guided_regex) uses
// into a small syntax tree over Unicode code points, for regex_dfa.h to compile.
//
// Supported: literals (UTF-8), escapes \d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH and escaped
// punctuation; classes [a-z] [^...] (with the escapes above inside); '.' (any code point except the
// ECMA line terminators \n \r U+2028 U+2029); groups (...), (?:...), (?<name>...); alternation |;
// quantifiers * + ? {n} {n,} {n,m} and their lazy forms (laziness does not change the language);
// anchors ^ / $ only at the start / end of a top-level alternative. A '{' that does not start a
// quantifier is a literal (ECMA Annex B).
// Refused with InvalidArgument naming the construct and its byte offset: lookarounds, backreferences,
// word boundaries \b \B, other letter escapes, anchors inside the pattern, repeat counts above
// kMaxRepeatCount, nesting deeper than kMaxRegexNesting, and invalid UTF-8.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::chat::regex {

inline constexpr uint32_t kMaxRepeatCount = 1000;
inline constexpr int kMaxRegexNesting = 64;
inline constexpr uint32_t kUnboundedRepeat = UINT32_MAX;
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Inclusive code-point range.
struct CodeRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

enum class RegexKind : uint8_t {
  kEmpty,      // the empty string
  kClass,      // one code point from `ranges` (sorted, disjoint, no surrogates; empty: matches nothing)
  kConcat,     // children one after another
  kAlternate,  // any one child
  kRepeat,     // children[0] repeated min..max times (max kUnboundedRepeat: no upper bound)
};

struct RegexNode {
  RegexKind kind = RegexKind::kEmpty;
  std::vector<CodeRange> ranges;
  std::vector<RegexNode> children;
  uint32_t min = 0;
  uint32_t max = 0;
};

// A top-level alternative and whether it was anchored with ^ (start) / $ (end).
struct RegexBranch {
  RegexNode body;
  bool anchored_start = false;
  bool anchored_end = false;
};

struct ParsedRegex {
  std::vector<RegexBranch> branches;  // at least one
};

Result<ParsedRegex> ParseRegex(std::string_view pattern);

// Sorts and merges ranges, then removes the surrogates U+D800..U+DFFF (never valid UTF-8).
std::vector<CodeRange> NormalizeRanges(std::vector<CodeRange> ranges);
// Every scalar value (U+0000..U+10FFFF without surrogates) not in the normalized `ranges`.
std::vector<CodeRange> ComplementRanges(const std::vector<CodeRange>& ranges);

}  // namespace k3::chat::regex
