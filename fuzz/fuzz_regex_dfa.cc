// libFuzzer target for the regex parser and DFA compiler (src/chat/regex_dfa.h): the first byte picks the
// options (full match, JSON-safe alphabet, a small state cap), the rest is the pattern. Compiling either
// fails with InvalidArgument or yields a DFA whose every live transition leads to a state that can still
// accept, with consistent shortest-completion distances; a walk along them reaches acceptance.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/chat/regex_dfa.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 512) return 0;
  k3::chat::regex::RegexOptions options;
  options.full_match = (data[0] & 1) != 0;
  options.json_string_safe = (data[0] & 2) != 0;
  if ((data[0] & 4) != 0) options.max_dfa_states = 64;
  const std::string_view pattern(reinterpret_cast<const char*>(data + 1), size - 1);
  auto compiled = k3::chat::regex::CompileRegex(pattern, options);
  if (!compiled.ok()) {
    if (compiled.status().code() != k3::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  const k3::chat::regex::ByteDfa& dfa = *compiled;
  using k3::chat::regex::ByteDfa;
  if (dfa.Empty()) return 0;
  if (dfa.next.size() > options.max_dfa_states) std::abort();
  for (size_t s = 0; s < dfa.next.size(); ++s) {
    if (dfa.accepting[s] != (dfa.min_to_accept[s] == 0)) std::abort();
    for (int b = 0; b < 256; ++b) {
      const int32_t t = dfa.next[s][b];
      if (t == ByteDfa::kDead) continue;
      if (dfa.min_to_accept[t] == ByteDfa::kNoAccept) std::abort();
      if (options.json_string_safe && (b < 0x20 || b == '"' || b == '\\')) std::abort();
    }
  }
  // Greedy shortest walk from the start: each step lowers the distance by one and ends accepting.
  int32_t state = dfa.start;
  while (dfa.min_to_accept[state] > 0) {
    int32_t best = ByteDfa::kDead;
    for (int b = 0; b < 256 && best == ByteDfa::kDead; ++b) {
      const int32_t t = dfa.next[state][b];
      if (t != ByteDfa::kDead && dfa.min_to_accept[t] == dfa.min_to_accept[state] - 1) best = t;
    }
    if (best == ByteDfa::kDead) std::abort();
    state = best;
  }
  if (!dfa.accepting[state]) std::abort();
  return 0;
}
