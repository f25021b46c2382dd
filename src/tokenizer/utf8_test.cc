// Tests for the UTF-8 helpers.
#include "src/tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace k3::tokenizer {
namespace {

TEST(Utf8Test, ValidatesLikeRfc3629) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE4\xBD\xA0 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE4\xBD"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(Utf8Test, DecodesAndEncodesCodePoints) {
  for (char32_t cp : {U'A', U'\u00E9', U'\u4F60', U'\U0001F600', U'\U0010FFFF'}) {
    std::string bytes;
    AppendUtf8(cp, bytes);
    ASSERT_EQ(ValidSequenceLength(bytes, 0), bytes.size());
    EXPECT_EQ(DecodeSequence(bytes, 0, bytes.size()), cp);
  }
}

TEST(Utf8Test, IncompleteTailLength) {
  EXPECT_EQ(IncompleteTailLength(""), 0u);
  EXPECT_EQ(IncompleteTailLength("abc"), 0u);
  EXPECT_EQ(IncompleteTailLength("a\xF0"), 1u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F"), 2u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F\x98\x80"), 0u);  // complete
  EXPECT_EQ(IncompleteTailLength("a\xE0\x80"), 0u);          // can never become valid
  EXPECT_EQ(IncompleteTailLength("a\x80"), 0u);
}

TEST(Utf8Test, PythonSpaceSet) {
  for (char32_t cp :
       {U' ', U'\t', U'\n', U'\r', U'\x0b', U'\x0c', U'\x1c', U'\x1f', U'\u0085', U'\u00a0', U'\u1680',
        U'\u2000', U'\u200a', U'\u2028', U'\u2029', U'\u202f', U'\u205f', U'\u3000'}) {
    EXPECT_TRUE(IsPythonSpace(cp)) << static_cast<uint32_t>(cp);
  }
  for (char32_t cp : {U'a', U'\x00', U'\u200b', U'\u180e', U'\ufeff', U'\u4f60'}) {
    EXPECT_FALSE(IsPythonSpace(cp)) << static_cast<uint32_t>(cp);
  }
}

TEST(Utf8Test, ReplaceInvalidUtf8) {
  EXPECT_EQ(ReplaceInvalidUtf8("a\xFF"
                               "b\xC3\xA9"),
            "a\xEF\xBF\xBD"
            "b\xC3\xA9");
  // A truncated sequence is one replacement; a surrogate's three bytes are three.
  EXPECT_EQ(ReplaceInvalidUtf8("\xE4\xBDx"), "\xEF\xBF\xBDx");
  EXPECT_EQ(ReplaceInvalidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace k3::tokenizer
