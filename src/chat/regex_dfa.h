// Compiles a regex (regex_parse.h) into a byte-level DFA over UTF-8 text: Thompson NFA over byte ranges
// (each code-point class expanded into its UTF-8 byte sequences), then subset construction with a state
// cap, then pruning of states from which no accepting state is reachable.
//
// Match semantics (RegexOptions::full_match):
//   false (JSON Schema `pattern`, which the spec leaves unanchored): every top-level alternative that does
//         not start with ^ may be preceded by any text, and one that does not end with $ may be followed
//         by any text, i.e. the DFA accepts s iff ECMAScript's RegExp(pattern).test(s).
//   true  (vLLM guided_regex, like xgrammar): the whole text must match; ^ and $ at the ends are no-ops.
// Invariant of the result: every transition leads to a state from which an accepting state is
// reachable (min_to_accept < kNoAccept), so a walk along live transitions never dead-ends.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace k3::chat::regex {

inline constexpr uint32_t kDefaultMaxDfaStates = 4096;
inline constexpr uint32_t kMaxNfaStates = 200000;

struct RegexOptions {
  bool full_match = false;
  uint32_t max_dfa_states = kDefaultMaxDfaStates;  // more is an InvalidArgument naming the pattern
  // Drop transitions on bytes a JSON string cannot hold raw ('"', '\\', 0x00..0x1F), so every accepted
  // text can be written between quotes without escapes and decodes to itself.
  bool json_string_safe = false;
};

struct ByteDfa {
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kNoAccept = INT32_MAX;
  std::vector<std::array<int32_t, 256>> next;  // [state][byte]: next state or kDead
  std::vector<uint8_t> accepting;              // [state]
  std::vector<int32_t> min_to_accept;          // [state]: fewest bytes to an accepting state
  int32_t start = kDead;                       // kDead: the language is empty

  bool Empty() const { return start == kDead; }
  int32_t Step(int32_t state, uint8_t byte) const { return state == kDead ? kDead : next[state][byte]; }
  bool Matches(std::string_view text) const;
};

Result<ByteDfa> CompileRegex(std::string_view pattern, const RegexOptions& options);

// A deterministic byte automaton given by functions, to intersect a ByteDfa with: states are small
// non-negative integers, next returns -1 to refuse a byte.
struct ByteFilter {
  int32_t start = 0;
  std::function<int32_t(int32_t state, uint8_t byte)> next;
  std::function<bool(int32_t state)> accepting;
};

// The DFA of texts both accept (product construction, pruned like CompileRegex's result); more than
// max_states product states is an InvalidArgument that names `what`.
Result<ByteDfa> Intersect(const ByteDfa& dfa, const ByteFilter& filter, uint32_t max_states,
                          std::string_view what);
// The filter form of a ByteDfa (to intersect two DFAs).
ByteFilter AsFilter(const ByteDfa& dfa);

}  // namespace k3::chat::regex
