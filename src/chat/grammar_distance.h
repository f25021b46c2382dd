// How far a matcher state is from a complete output, in tokens: the fewest tokens that complete it,
// counting one token per symbol (byte or markup special) except inside literals (markup, names, enum
// values), which cost the fewest vocabulary tokens that spell them. Every byte is a token of its own
// (byte-level BPE), so a state at distance d can always be completed in d tokens, and the constraint uses
// that to steer an output into a token budget (max_tokens).
//
// Consistent: from any state at distance d > 0 some token (the first of a shortest completion) leads to a
// state at distance d - 1. Exact for the grammar's own nodes ("" strings, one-digit numbers, required
// members only, minItems items, one tool call) up to tokens that span several nodes, which can only
// shorten the output. Two approximations, both rare: a key equal to a declared name counts one extra
// byte, and the nesting limit (kMaxNesting) is not considered.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/chat/grammar.h"
#include "src/chat/grammar_matcher.h"
#include "src/chat/grammar_vocab.h"

namespace k3::chat::grammar {

inline constexpr int64_t kUnreachable = int64_t{1} << 40;

class CompletionDistance {
 public:
  // Precomputes each node's shortest complete match (a fixed point, so recursive schemas work). Without
  // a vocabulary every symbol counts as one token.
  CompletionDistance(std::shared_ptr<const Grammar> grammar, const VocabTrie* vocab);

  // Fewest symbols from `state` to a complete output (0: complete); kUnreachable when none is known.
  int64_t operator()(const MatchState& state, const Matcher& matcher) const;
  // Fewest symbols of a complete match of `node` from its start.
  int64_t MinLength(uint32_t node) const { return min_length_[node]; }

 private:
  // Fewest symbols that finish frame f (its child, if any, already finished); frames[0..index) lie below.
  int64_t Remaining(const Frame* frames, size_t index, const Frame& f) const;

  // Fewest tokens from each trie node of a literal-set node to one of its ends.
  void ComputeLiteralCosts(uint32_t node, const VocabTrie* vocab);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<int64_t> min_length_;
  std::vector<std::vector<int64_t>> literal_cost_;  // [node][trie node]; empty for other kinds
};

}  // namespace k3::chat::grammar
