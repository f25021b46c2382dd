// Vocabulary trie construction (sorted byte strings -> a DFS-ordered trie) and its cache.
#include "src/chat/grammar_vocab.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <string_view>

#include "src/chat/grammar.h"

namespace k3::chat::grammar {
namespace {

class Builder {
 public:
  Builder(const std::vector<std::string_view>& bytes, VocabTrie& trie) : bytes_(bytes), trie_(trie) {}

  // Builds the node for sorted[lo, hi), all of which share their first `depth` bytes.
  uint32_t Build(const std::vector<int32_t>& sorted, size_t lo, size_t hi, size_t depth) {
    const auto id = static_cast<uint32_t>(trie_.nodes.size());
    trie_.nodes.emplace_back();
    trie_.nodes[id].token_begin = static_cast<uint32_t>(trie_.tokens.size());
    while (lo < hi && bytes_[static_cast<size_t>(sorted[lo])].size() == depth)
      trie_.tokens.push_back(sorted[lo++]);
    trie_.nodes[id].token_end = static_cast<uint32_t>(trie_.tokens.size());
    // Group the rest by their byte at `depth`; children are laid out contiguously.
    std::vector<std::pair<size_t, size_t>> groups;
    for (size_t i = lo; i < hi;) {
      const char c = bytes_[static_cast<size_t>(sorted[i])][depth];
      size_t j = i;
      while (j < hi && bytes_[static_cast<size_t>(sorted[j])][depth] == c) ++j;
      groups.emplace_back(i, j);
      i = j;
    }
    const auto begin = static_cast<uint32_t>(trie_.children.size());
    trie_.children.resize(trie_.children.size() + groups.size());
    trie_.nodes[id].child_begin = begin;
    trie_.nodes[id].child_end = begin + static_cast<uint32_t>(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto [glo, ghi] = groups[g];
      const auto byte = static_cast<uint8_t>(bytes_[static_cast<size_t>(sorted[glo])][depth]);
      const uint32_t child = Build(sorted, glo, ghi, depth + 1);
      trie_.children[begin + g] = VocabTrie::Edge{byte, child};
    }
    return id;
  }

 private:
  const std::vector<std::string_view>& bytes_;
  VocabTrie& trie_;
};

uint64_t Fingerprint(const tokenizer::Tokenizer& tokenizer) {
  uint64_t h = 1469598103934665603ull ^ tokenizer.vocab_size();
  const auto mix = [&h](uint8_t c) { h = (h ^ c) * 1099511628211ull; };
  for (const std::string& rank : tokenizer.ranks()) {
    for (char c : rank) mix(static_cast<uint8_t>(c));
    mix(0xFF);  // separator (0xFF never starts a UTF-8 character, but any value works)
  }
  return h;
}

}  // namespace

Result<std::shared_ptr<const VocabTrie>> GetVocabTrie(const tokenizer::Tokenizer& tokenizer) {
  static std::mutex mutex;
  static std::map<uint64_t, std::shared_ptr<const VocabTrie>> cache;
  const uint64_t key = Fingerprint(tokenizer);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto trie = std::make_shared<VocabTrie>();
  trie->vocab_size = tokenizer.vocab_size();
  for (auto [name, symbol] :
       {std::pair{"<|open|>", kSymOpen}, std::pair{"<|close|>", kSymClose}, std::pair{"<|sep|>", kSymSep}}) {
    K3_ASSIGN_OR_RETURN(tokenizer::TokenId id, tokenizer.SpecialId(name));
    trie->markup.emplace_back(static_cast<int32_t>(id), symbol);
  }
  const std::vector<std::string>& ranks = tokenizer.ranks();
  std::vector<std::string_view> bytes(ranks.begin(), ranks.end());
  std::vector<int32_t> sorted;
  for (size_t id = 0; id < ranks.size(); ++id) {
    if (!ranks[id].empty()) sorted.push_back(static_cast<int32_t>(id));
    trie->max_token_bytes = std::max(trie->max_token_bytes, ranks[id].size());
  }
  std::sort(sorted.begin(), sorted.end(), [&](int32_t x, int32_t y) {
    return bytes[static_cast<size_t>(x)] < bytes[static_cast<size_t>(y)] ||
           (bytes[static_cast<size_t>(x)] == bytes[static_cast<size_t>(y)] && x < y);
  });
  Builder(bytes, *trie).Build(sorted, 0, sorted.size(), 0);
  // Children come after their parent (DFS order), so one backward pass fills quote_below.
  trie->quote_below.assign(trie->nodes.size(), 0);
  for (size_t n = trie->nodes.size(); n-- > 0;) {
    for (uint32_t e = trie->nodes[n].child_begin; e < trie->nodes[n].child_end; ++e) {
      const VocabTrie::Edge edge = trie->children[e];
      if (edge.byte == '"') trie->quote_below[edge.node] = 1;
      trie->quote_below[n] |= trie->quote_below[edge.node];
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = cache.emplace(key, std::move(trie));
  return it->second;
}

}  // namespace k3::chat::grammar
