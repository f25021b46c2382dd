// Byte-level BPE training with incremental pair counts.
//
// The corpus is pre-tokenised and reduced to unique pieces ("words") with counts. Pair counts are kept
// for the whole corpus, together with the list of words each pair occurs in; a max-heap with lazy
// invalidation gives the most frequent pair. Applying a merge only touches the words that contain the
// pair: their old pairs are subtracted, the merge is applied, and their new pairs are added back. Ties
// in frequency go to the pair with the lowest (left rank, right rank), so training is deterministic.
// A merge whose bytes already form a token (e.g. "ab"+"c" after "a"+"bc") reuses that token and takes
// no new rank, so ranks stay unique byte strings (tiktoken requires it).
#include "src/tokenizer/bpe_trainer.h"

#include <cstdint>
#include <queue>
#include <string>
#include <unordered_map>

#include "src/tokenizer/pretokenizer.h"

namespace k3::tokenizer {
namespace {

using TokenIndex = uint32_t;
using PairKey = uint64_t;

PairKey MakePair(TokenIndex left, TokenIndex right) { return (static_cast<PairKey>(left) << 32) | right; }
TokenIndex PairLeft(PairKey key) { return static_cast<TokenIndex>(key >> 32); }
TokenIndex PairRight(PairKey key) { return static_cast<TokenIndex>(key & 0xFFFFFFFFu); }

struct Word {
  std::vector<TokenIndex> tokens;
  int64_t count = 0;
};

struct HeapEntry {
  int64_t count;
  PairKey pair;
  // Max-heap: higher count first; on equal counts the lower pair key wins.
  bool operator<(const HeapEntry& other) const {
    if (count != other.count) return count < other.count;
    return pair > other.pair;
  }
};

class Trainer {
 public:
  explicit Trainer(std::string_view corpus) {
    for (int byte = 0; byte < 256; ++byte) AddToken(std::string(1, static_cast<char>(byte)));
    std::vector<std::string_view> pieces;
    PreTokenizer::Shared().Split(corpus, pieces);
    std::unordered_map<std::string_view, uint32_t> word_index;
    for (std::string_view piece : pieces) {
      auto [it, inserted] = word_index.try_emplace(piece, static_cast<uint32_t>(words_.size()));
      if (inserted) {
        Word word;
        for (char c : piece) word.tokens.push_back(static_cast<unsigned char>(c));
        words_.push_back(std::move(word));
      }
      ++words_[it->second].count;
    }
    for (uint32_t w = 0; w < words_.size(); ++w) AddPairs(w);
    for (const auto& [pair, count] : pair_counts_) heap_.push({count, pair});
  }

  std::vector<std::string> Run(size_t num_ranks) {
    std::vector<uint32_t> visited(words_.size(), UINT32_MAX);
    uint32_t merge_number = 0;
    while (tokens_.size() < num_ranks && !heap_.empty()) {
      const HeapEntry top = heap_.top();
      heap_.pop();
      auto found = pair_counts_.find(top.pair);
      if (found == pair_counts_.end() || found->second != top.count) continue;  // stale
      if (top.count <= 0) break;
      const TokenIndex left = PairLeft(top.pair), right = PairRight(top.pair);
      const TokenIndex merged = AddToken(tokens_[left] + tokens_[right]);
      changed_.clear();
      std::vector<uint32_t> word_list = std::move(where_[top.pair]);
      where_.erase(top.pair);
      for (uint32_t w : word_list) {
        if (visited[w] == merge_number) continue;
        visited[w] = merge_number;
        MergeInWord(w, left, right, merged);
      }
      ++merge_number;
      for (PairKey pair : changed_) {
        auto it = pair_counts_.find(pair);
        if (it != pair_counts_.end() && it->second > 0) heap_.push({it->second, pair});
      }
    }
    return std::move(tokens_);
  }

 private:
  TokenIndex AddToken(std::string bytes) {
    auto [it, inserted] = token_index_.try_emplace(bytes, static_cast<TokenIndex>(tokens_.size()));
    if (inserted) tokens_.push_back(std::move(bytes));
    return it->second;
  }

  void AddPairs(uint32_t w) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.tokens.size(); ++i) {
      const PairKey pair = MakePair(word.tokens[i], word.tokens[i + 1]);
      pair_counts_[pair] += word.count;
      where_[pair].push_back(w);
      changed_.push_back(pair);
    }
  }

  void RemovePairs(uint32_t w) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.tokens.size(); ++i) {
      const PairKey pair = MakePair(word.tokens[i], word.tokens[i + 1]);
      auto it = pair_counts_.find(pair);
      it->second -= word.count;
      if (it->second == 0) pair_counts_.erase(it);
      changed_.push_back(pair);
    }
  }

  void MergeInWord(uint32_t w, TokenIndex left, TokenIndex right, TokenIndex merged) {
    std::vector<TokenIndex>& tokens = words_[w].tokens;
    bool contains = false;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i] == left && tokens[i + 1] == right) {
        contains = true;
        break;
      }
    }
    if (!contains) return;
    RemovePairs(w);
    size_t out = 0;
    for (size_t i = 0; i < tokens.size(); ++out) {
      if (i + 1 < tokens.size() && tokens[i] == left && tokens[i + 1] == right) {
        tokens[out] = merged;
        i += 2;
      } else {
        tokens[out] = tokens[i];
        i += 1;
      }
    }
    tokens.resize(out);
    AddPairs(w);
  }

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, TokenIndex> token_index_;
  std::vector<Word> words_;
  std::unordered_map<PairKey, int64_t> pair_counts_;
  std::unordered_map<PairKey, std::vector<uint32_t>> where_;
  std::priority_queue<HeapEntry> heap_;
  std::vector<PairKey> changed_;
};

}  // namespace

std::vector<std::string> TrainByteLevelBpe(std::string_view corpus, size_t num_ranks) {
  return Trainer(corpus).Run(num_ranks);
}

}  // namespace k3::tokenizer
