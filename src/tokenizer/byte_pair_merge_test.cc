// Tests for byte-pair merging: hand-checked cases, linear vs heap agreement, no quadratic blow-up.
#include "src/tokenizer/byte_pair_merge.h"

#include <random>

#include <gtest/gtest.h>

#include "src/tokenizer/bpe_trainer.h"

namespace k3::tokenizer {
namespace {

std::vector<std::string> ByteRanks() {
  std::vector<std::string> ranks;
  for (int b = 0; b < 256; ++b) ranks.emplace_back(1, static_cast<char>(b));
  return ranks;
}

TEST(BytePairMergeTest, MergesLowestRankLeftmostFirst) {
  std::vector<std::string> tokens = ByteRanks();
  tokens.push_back("ab");   // 256
  tokens.push_back("bc");   // 257
  tokens.push_back("abc");  // 258
  tokens.push_back("aa");   // 259
  const RankTable ranks(tokens);
  std::vector<Rank> out;
  BytePairMerge("abc", ranks, out);  // "ab" (256) merges first, then "abc" (258)
  EXPECT_EQ(out, (std::vector<Rank>{258}));
  out.clear();
  BytePairMerge("aaa", ranks, out);  // leftmost "aa" wins the tie
  EXPECT_EQ(out, (std::vector<Rank>{259, 'a'}));
  out.clear();
  BytePairMerge("xbc", ranks, out);
  EXPECT_EQ(out, (std::vector<Rank>{'x', 257}));
  out.clear();
  BytePairMerge("abc", ranks, out, 257);  // ranks >= 257 are ignored
  EXPECT_EQ(out, (std::vector<Rank>{256, 'c'}));
}

TEST(BytePairMergeTest, LinearAndHeapAgree) {
  const std::vector<std::string> tokens = TrainByteLevelBpe(EmbeddedCorpus().substr(0, 200'000), 2000);
  const RankTable ranks(tokens);
  std::mt19937 rng(7);
  const std::string alphabet = "aaaabbbcde  ththe\xE4\xBD\xA0\xE5\xA5\xBD";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string piece;
    const size_t length = 1 + rng() % 80;
    for (size_t i = 0; i < length; ++i) piece += alphabet[rng() % alphabet.size()];
    std::vector<Rank> linear, heap;
    BytePairMergeLinear(piece, ranks, linear);
    BytePairMergeHeap(piece, ranks, heap);
    ASSERT_EQ(linear, heap) << piece;
    std::string joined;
    for (Rank r : heap) joined += tokens[r];
    ASSERT_EQ(joined, piece);
  }
}

// A long single-piece input merges completely. No wall-clock bound (timed tests are flaky on shared
// machines): at 400,000 bytes the O(n log n) merge takes well under a second even under ASan, while a
// quadratic merge (~10^11 steps) would run into ctest's per-test timeout.
TEST(BytePairMergeTest, LongPiecesAreNotQuadratic) {
  const std::vector<std::string> tokens = TrainByteLevelBpe("aaaa bbbb abab aaaa", 300);
  const RankTable ranks(tokens);
  const std::string piece(400'000, 'a');
  std::vector<Rank> out;
  BytePairMerge(piece, ranks, out);
  size_t total = 0;
  for (Rank r : out) total += tokens[r].size();
  EXPECT_EQ(total, piece.size());
  EXPECT_LT(out.size(), piece.size() / 2);  // merges happened
}

}  // namespace
}  // namespace k3::tokenizer
