// StopStringMatcher tests: matches across chunk boundaries, held-back prefixes, earliest match.
#include "src/engine/stop_strings.h"

#include <gtest/gtest.h>

namespace k3::engine {
namespace {

TEST(StopStrings, PassesTextThroughWithoutStops) {
  StopStringMatcher m({});
  EXPECT_EQ(m.Push("abc").text, "abc");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopStrings, MatchAcrossChunksCutsTheStopString) {
  StopStringMatcher m({"END"});
  auto a = m.Push("hello E");
  EXPECT_EQ(a.text, "hello ");  // "E" held back
  EXPECT_FALSE(a.matched);
  auto b = m.Push("N");
  EXPECT_EQ(b.text, "");
  auto c = m.Push("Dtrailing");
  EXPECT_EQ(c.text, "");
  ASSERT_TRUE(c.matched);
  EXPECT_EQ(*c.matched, "END");
}

TEST(StopStrings, ReleasesAHeldPrefixThatDidNotMatch) {
  StopStringMatcher m({"END"});
  EXPECT_EQ(m.Push("xE").text, "x");
  EXPECT_EQ(m.Push("Nd").text, "ENd");
  EXPECT_EQ(m.Push("EN").text, "");
  EXPECT_EQ(m.Flush(), "EN");
}

TEST(StopStrings, EarliestMatchWinsAcrossStopStrings) {
  StopStringMatcher m({"world", "lo w"});
  auto out = m.Push("hello world");
  EXPECT_EQ(out.text, "hel");
  EXPECT_EQ(*out.matched, "lo w");
}

TEST(StopStrings, TextBeforeTheStopInTheSameChunkIsKept) {
  StopStringMatcher m({"\n\n"});
  EXPECT_EQ(m.Push("a\n").text, "a");
  auto out = m.Push("\nb");
  EXPECT_EQ(out.text, "");
  EXPECT_TRUE(out.matched);
}

}  // namespace
}  // namespace k3::engine
