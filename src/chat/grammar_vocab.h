// The tokenizer's vocabulary as a byte trie, for computing a grammar's allowed-token mask by walking the
// trie from the current match state and pruning a whole subtree as soon as its first byte is rejected.
// Special tokens are kept apart: only <|open|>, <|close|> and <|sep|> are grammar symbols.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "src/base/status.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::chat::grammar {

struct VocabTrie {
  struct TrieNode {
    uint32_t child_begin = 0;  // children[child_begin, child_end), sorted by byte
    uint32_t child_end = 0;
    uint32_t token_begin = 0;  // tokens[token_begin, token_end): ids whose bytes end here
    uint32_t token_end = 0;
  };
  struct Edge {
    uint8_t byte = 0;
    uint32_t node = 0;
  };
  std::vector<TrieNode> nodes;  // nodes[0] is the root (the empty string)
  std::vector<Edge> children;
  std::vector<int32_t> tokens;
  std::vector<std::pair<int32_t, int>> markup;  // (id, grammar symbol) of the three markup specials
  std::vector<uint8_t> quote_below;             // [node]: a '"' on the edge into it or anywhere below it
  size_t vocab_size = 0;
  size_t max_token_bytes = 0;

  // Masks of the tokens that stay inside a leaf (grammar_matcher.h SingleLeaf), by leaf key; they depend
  // only on the vocabulary and the leaf's kind / mode / sub-state, so every constraint shares them.
  mutable std::mutex leaf_mutex;
  mutable std::map<uint64_t, std::shared_ptr<const std::vector<uint64_t>>> leaf_masks;
};

// Built once per distinct vocabulary and shared (a process-wide cache keyed by the vocabulary's
// contents, so equal tokenizers share one trie). Errors when a markup special is missing.
Result<std::shared_ptr<const VocabTrie>> GetVocabTrie(const tokenizer::Tokenizer& tokenizer);

}  // namespace k3::chat::grammar
