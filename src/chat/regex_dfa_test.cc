// Tests of the regex parser and byte DFA (regex_parse.h, regex_dfa.h): matches and non-matches, UTF-8
// classes, JSON-safe alphabets, shortest completions, refused constructs, the state cap, and a
// comparison against std::regex (ECMAScript) on random strings as a scalar reference.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

#include "src/chat/regex_dfa.h"
#include "src/chat/regex_parse.h"

namespace k3::chat::regex {
namespace {

ByteDfa Compile(std::string_view pattern, bool full_match = false, bool json_safe = false) {
  RegexOptions options;
  options.full_match = full_match;
  options.json_string_safe = json_safe;
  auto dfa = CompileRegex(pattern, options);
  EXPECT_TRUE(dfa.ok()) << pattern << ": " << dfa.status().ToString();
  return dfa.ok() ? std::move(dfa).value() : ByteDfa{};
}

std::string ErrorOf(std::string_view pattern) {
  auto dfa = CompileRegex(pattern, RegexOptions{});
  return dfa.ok() ? std::string("(compiled)") : dfa.status().ToString();
}

TEST(RegexDfa, LiteralsClassesAndQuantifiers) {
  const ByteDfa dfa = Compile("^[a-c]+\\d{2,3}(x|yz)?$");
  EXPECT_TRUE(dfa.Matches("a12"));
  EXPECT_TRUE(dfa.Matches("cab123yz"));
  EXPECT_TRUE(dfa.Matches("b99x"));
  EXPECT_FALSE(dfa.Matches("12"));
  EXPECT_FALSE(dfa.Matches("a1"));
  EXPECT_FALSE(dfa.Matches("a1234"));
  EXPECT_FALSE(dfa.Matches("a12y"));
  EXPECT_FALSE(dfa.Matches("d12"));
}

TEST(RegexDfa, UnanchoredPatternSearchesLikeJsonSchema) {
  const ByteDfa dfa = Compile("ab+c");
  EXPECT_TRUE(dfa.Matches("abc"));
  EXPECT_TRUE(dfa.Matches("xxabbbcyy\n"));
  EXPECT_FALSE(dfa.Matches("ac"));
  const ByteDfa start_only = Compile("^ab");
  EXPECT_TRUE(start_only.Matches("abzz"));
  EXPECT_FALSE(start_only.Matches("zab"));
  const ByteDfa end_only = Compile("ab$");
  EXPECT_TRUE(end_only.Matches("zzab"));
  EXPECT_FALSE(end_only.Matches("abz"));
  // ^a|b$: (^a) or (b$), per branch.
  const ByteDfa branches = Compile("^a|b$");
  EXPECT_TRUE(branches.Matches("ax"));
  EXPECT_TRUE(branches.Matches("xb"));
  EXPECT_FALSE(branches.Matches("xa"));
}

TEST(RegexDfa, FullMatchIgnoresEndAnchors) {
  const ByteDfa dfa = Compile("ab+c", /*full_match=*/true);
  EXPECT_TRUE(dfa.Matches("abbc"));
  EXPECT_FALSE(dfa.Matches("xabc"));
  EXPECT_TRUE(Compile("^ab$", true).Matches("ab"));
}

TEST(RegexDfa, Utf8Classes) {
  const ByteDfa dot = Compile("^.$");
  EXPECT_TRUE(dot.Matches("a"));
  EXPECT_TRUE(dot.Matches("\xC3\xA9"));          // é
  EXPECT_TRUE(dot.Matches("\xE2\x82\xAC"));      // €
  EXPECT_TRUE(dot.Matches("\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_FALSE(dot.Matches("\n"));
  EXPECT_FALSE(dot.Matches("\r"));
  EXPECT_FALSE(dot.Matches("\xC3"));          // truncated
  EXPECT_FALSE(dot.Matches("\xED\xA0\x80"));  // a surrogate
  EXPECT_FALSE(dot.Matches("\xC0\x80"));      // overlong
  EXPECT_FALSE(dot.Matches("ab"));
  const ByteDfa greek = Compile("^[α-ω]+$");
  EXPECT_TRUE(greek.Matches("αβγ"));
  EXPECT_FALSE(greek.Matches("αa"));
  const ByteDfa not_a = Compile("^[^a]$");
  EXPECT_TRUE(not_a.Matches("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_FALSE(not_a.Matches("a"));
  const ByteDfa escapes = Compile("^\\u00e9\\x41\\.$");
  EXPECT_TRUE(
      escapes.Matches("\xC3\xA9"
                      "A."));
  EXPECT_FALSE(
      escapes.Matches("\xC3\xA9"
                      "Ax"));
  // Every byte-range piece of a wide class: everything outside ASCII, at the length boundaries.
  const ByteDfa wide = Compile("^[^\\x00-\\x7F]$");
  for (const char* text : {"\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
                           "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"}) {
    EXPECT_TRUE(wide.Matches(text)) << text;
  }
  for (const char* text : {"a", "\xED\xBF\xBF", "\xE0\x80\x80", "\xF4\x90\x80\x80", "\xC2"}) {
    EXPECT_FALSE(wide.Matches(text)) << text;
  }
}

TEST(RegexDfa, JsonSafeAlphabetAndShortestCompletion) {
  const ByteDfa quote = Compile("^\"$", false, /*json_safe=*/true);
  EXPECT_TRUE(quote.Empty());
  const ByteDfa some = Compile("^a[\"b\\n]$", false, true);
  EXPECT_TRUE(some.Matches("ab"));
  EXPECT_FALSE(some.Matches("a\""));
  EXPECT_FALSE(some.Matches("a\n"));
  const ByteDfa abc = Compile("^abc");
  ASSERT_FALSE(abc.Empty());
  EXPECT_EQ(abc.min_to_accept[abc.start], 3);
  EXPECT_EQ(Compile("^x{4,}y?$").min_to_accept[0], 4);
  // No live transition leads to a state that cannot accept.
  const ByteDfa tricky = Compile("^(a[b\"]|c)d$", false, true);
  for (size_t s = 0; s < tricky.next.size(); ++s) {
    for (int b = 0; b < 256; ++b) {
      const int32_t t = tricky.next[s][b];
      if (t != ByteDfa::kDead) {
        EXPECT_LT(tricky.min_to_accept[t], ByteDfa::kNoAccept);
      }
    }
  }
  EXPECT_TRUE(tricky.Matches("abd"));
  EXPECT_TRUE(tricky.Matches("cd"));
}

TEST(RegexDfa, RefusedConstructsNameThemselves) {
  EXPECT_NE(ErrorOf("a(?=b)").find("lookahead"), std::string::npos);
  EXPECT_NE(ErrorOf("a(?!b)").find("lookahead"), std::string::npos);
  EXPECT_NE(ErrorOf("(?<=a)b").find("lookbehind"), std::string::npos);
  EXPECT_NE(ErrorOf("(a)\\1").find("backreference"), std::string::npos);
  EXPECT_NE(ErrorOf("(?<n>a)\\k<n>").find("backreference"), std::string::npos);
  EXPECT_NE(ErrorOf("\\bword").find("word boundary"), std::string::npos);
  EXPECT_NE(ErrorOf("a^b").find("anchor"), std::string::npos);
  EXPECT_NE(ErrorOf("a$b").find("anchor"), std::string::npos);
  EXPECT_NE(ErrorOf("(a$)").find("anchor"), std::string::npos);
  EXPECT_NE(ErrorOf("(ab").find("missing ')'"), std::string::npos);
  EXPECT_NE(ErrorOf("ab)").find("unmatched ')'"), std::string::npos);
  EXPECT_NE(ErrorOf("[ab").find("unterminated"), std::string::npos);
  EXPECT_NE(ErrorOf("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(ErrorOf("a**").find("quantifier after a quantifier"), std::string::npos);
  EXPECT_NE(ErrorOf("a{3,2}").find("m < n"), std::string::npos);
  EXPECT_NE(ErrorOf("a{1001}").find("repeat count"), std::string::npos);
  EXPECT_NE(ErrorOf("[z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(ErrorOf("\\q").find("unsupported escape"), std::string::npos);
  EXPECT_NE(ErrorOf("\xFF").find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string(100, '(') + std::string(100, ')')).find("nested"), std::string::npos);
  // Lazy quantifiers and a literal '{' are fine.
  EXPECT_EQ(ErrorOf("a*?b+?c??d{2}?"), "(compiled)");
  EXPECT_TRUE(Compile("^a{b$").Matches("a{b"));
}

TEST(RegexDfa, StateCapIsAnError) {
  // The n-th symbol from the end being 'a' needs 2^n DFA states.
  const std::string error = ErrorOf("a[ab]{14}$");
  EXPECT_NE(error.find("more than 4096 states"), std::string::npos) << error;
  EXPECT_NE(error.find("a[ab]{14}$"), std::string::npos) << error;
  // Large NFAs too: nested counted repeats.
  EXPECT_NE(ErrorOf("((a{1000}){1000}){1000}").find("NFA states"), std::string::npos);
  EXPECT_EQ(ErrorOf("a[ab]{8}$"), "(compiled)");
}

// The scalar reference: std::regex (ECMAScript) search / full match on random short ASCII strings.
TEST(RegexDfa, AgreesWithStdRegexOnRandomStrings) {
  const char* kPatterns[] = {
      "ab",
      "^ab",
      "ab$",
      "^a|b$",
      "^(a|b)*c$",
      "a.c",
      "^\\d+$",
      "^\\w+@\\w+\\.com$",
      "\\s",
      "^\\S*$",
      "^[^ab]{2}$",
      "^[a-c\\d]{1,3}$",
      "^(ab|a)(bc|c)?$",
      "x*y+z?",
      "^(?:a|bc){2,}$",
      "^$",
      "^[-.]+$",
      "\\.",
      "^a{0}b$",
      "^(a?){3}$",
      "[\\D]",
      "^\\W",
      "^(x(y(z)?)?)+$",
      "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
      "^.*$",
      "^.?b",
      "c[ab]*?c",
  };
  const std::string alphabet = "abcxyz09 .-@\n_";
  std::mt19937 rng(17);
  for (const char* pattern : kPatterns) {
    for (bool full : {false, true}) {
      const ByteDfa dfa = Compile(pattern, full);
      const std::regex reference(pattern, std::regex::ECMAScript);
      for (int trial = 0; trial < 400; ++trial) {
        std::string text;
        const int len = static_cast<int>(rng() % 9);
        for (int k = 0; k < len; ++k) text += alphabet[rng() % alphabet.size()];
        const bool expected = full ? std::regex_match(text, reference) : std::regex_search(text, reference);
        ASSERT_EQ(dfa.Matches(text), expected)
            << "pattern /" << pattern << "/ full=" << full << " text '" << text << "'";
      }
    }
  }
}

}  // namespace
}  // namespace k3::chat::regex
