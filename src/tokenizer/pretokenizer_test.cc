// Tests for the K3 pre-tokeniser: known splits, the long-input guard and invalid UTF-8.
#include "src/tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include "src/tokenizer/bpe_trainer.h"

namespace k3::tokenizer {
namespace {

std::vector<std::string> Pieces(std::string_view text) {
  std::vector<std::string_view> pieces;
  PreTokenizer::Shared().Split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

using Split = std::vector<std::string>;

TEST(PreTokenizerTest, SplitsLikeTheK3Pattern) {
  EXPECT_EQ(Pieces("Hello world"), (Split{"Hello", " world"}));
  EXPECT_EQ(Pieces("你好世界"), (Split{"你好世界"}));
  EXPECT_EQ(Pieces("The capital of France is"), (Split{"The", " capital", " of", " France", " is"}));
  EXPECT_EQ(Pieces("I'm here, they'LL see"), (Split{"I'm", " here", ",", " they'LL", " see"}));
  EXPECT_EQ(Pieces("12345678"), (Split{"123", "456", "78"}));
  EXPECT_EQ(Pieces("a  b"), (Split{"a", " ", " b"}));
  EXPECT_EQ(Pieces("x\n\n  y"), (Split{"x", "\n\n", " ", " y"}));
  EXPECT_EQ(Pieces("end   "), (Split{"end", "   "}));
  EXPECT_EQ(Pieces("CamelCaseWord"), (Split{"Camel", "Case", "Word"}));
  EXPECT_EQ(Pieces("HTTPServer"), (Split{"HTTPServer"}));
  EXPECT_EQ(Pieces("abc你好def"), (Split{"abc", "你好", "def"}));
  // Han is the Script property: U+3002 "。" (Script_Extensions Han) is punctuation, U+3005 "々" is Han.
  EXPECT_EQ(Pieces("好。々"), (Split{"好", "。", "々"}));
  EXPECT_EQ(Pieces("foo(bar)!!\n"), (Split{"foo", "(bar", ")!!\n"}));
  EXPECT_EQ(Pieces("cafe\xCC\x81"), (Split{"cafe\xCC\x81"}));  // combining mark stays in the word
  EXPECT_EQ(Pieces("\xF0\x9F\x98\x80\xF0\x9F\x98\x82 ok"),
            (Split{"\xF0\x9F\x98\x80\xF0\x9F\x98\x82", " ok"}));
  EXPECT_EQ(Pieces("\xE3\x80\x80x"), (Split{"\xE3\x80\x80x"}));  // U+3000 is \s: prefix of the letter run
}

TEST(PreTokenizerTest, PiecesConcatenateToTheInput) {
  const std::string_view corpus = EmbeddedCorpus();
  std::vector<std::string_view> pieces;
  PreTokenizer::Shared().Split(corpus, pieces);
  std::string joined;
  for (std::string_view piece : pieces) {
    ASSERT_FALSE(piece.empty());
    joined.append(piece);
  }
  EXPECT_EQ(joined, corpus);
}

TEST(PreTokenizerTest, GuardCutsLongRuns) {
  const std::string run(60'000, 'a');
  std::vector<std::string_view> segments;
  PreTokenizer::SplitLongInput(run, segments);
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0].size(), kGuardMaxRunChars);
  EXPECT_EQ(segments[1].size(), kGuardMaxRunChars);
  EXPECT_EQ(segments[2].size(), 10'000u);

  // Alternating runs shorter than the limit are never cut; the window limit counts code points.
  std::string mixed;
  while (mixed.size() < 1'000'000) mixed += "word \xE4\xBD\xA0 ";
  segments.clear();
  PreTokenizer::SplitLongInput(mixed, segments);
  size_t chars = 0;
  for (unsigned char c : segments[0]) chars += (c & 0xC0) != 0x80;
  EXPECT_EQ(chars, kGuardWindowChars);
  std::string joined;
  for (std::string_view segment : segments) joined.append(segment);
  EXPECT_EQ(joined, mixed);

  // Whitespace runs are cut too, and the regex restarts at the cut.
  const std::string spaces = std::string(30'000, ' ') + "x";
  std::vector<std::string_view> pieces;
  PreTokenizer::Shared().Split(spaces, pieces);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].size(), 25'000u);
  EXPECT_EQ(pieces[1], std::string(4'999, ' '));
  EXPECT_EQ(pieces[2], " x");
}

TEST(PreTokenizerTest, InvalidUtf8BecomesItsOwnPiece) {
  EXPECT_EQ(Pieces("ab\xFF\xFE"
                   "cd"),
            (Split{"ab", "\xFF\xFE", "cd"}));
  EXPECT_EQ(Pieces("\xC3"), (Split{"\xC3"}));
  EXPECT_EQ(Pieces("x \xED\xA0\x80 y"), (Split{"x", " ", "\xED\xA0\x80", " y"}));
}

}  // namespace
}  // namespace k3::tokenizer
