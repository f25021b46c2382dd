// Recursive-descent parser for the regex subset described in regex_parse.h.
#include "src/chat/regex_parse.h"

#include <algorithm>
#include <optional>
#include <string>

namespace k3::chat::regex {
namespace {

constexpr CodeRange kDigit[] = {{'0', '9'}};
constexpr CodeRange kWord[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMA-262 WhiteSpace and LineTerminator code points.
constexpr CodeRange kSpace[] = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                                {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
constexpr CodeRange kLineTerminators[] = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

template <size_t N>
std::vector<CodeRange> Ranges(const CodeRange (&r)[N]) {
  return std::vector<CodeRange>(r, r + N);
}

RegexNode ClassNode(std::vector<CodeRange> ranges) {
  RegexNode node;
  node.kind = RegexKind::kClass;
  node.ranges = NormalizeRanges(std::move(ranges));
  return node;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  Result<ParsedRegex> Parse() {
    ParsedRegex out;
    while (true) {
      RegexBranch branch;
      if (Peek('^')) {
        ++i_;
        branch.anchored_start = true;
      }
      K3_ASSIGN_OR_RETURN(branch.body, Concat(/*depth=*/0, &branch.anchored_end));
      out.branches.push_back(std::move(branch));
      if (i_ == p_.size()) break;
      if (p_[i_] == '|') {
        ++i_;
        continue;
      }
      return Error("unmatched ')'");
    }
    return out;
  }

 private:
  bool Peek(char c) const { return i_ < p_.size() && p_[i_] == c; }

  Status Error(std::string_view what) const {
    return InvalidArgument("regex /{}/: {} at offset {}", p_, what, i_);
  }

  // alternation := concat ('|' concat)*
  Result<RegexNode> Alternation(int depth) {
    RegexNode alt;
    alt.kind = RegexKind::kAlternate;
    while (true) {
      K3_ASSIGN_OR_RETURN(RegexNode branch, Concat(depth, nullptr));
      alt.children.push_back(std::move(branch));
      if (!Peek('|')) break;
      ++i_;
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  // concat := (atom quantifier*)*; at depth 0 a '$' may end it (reported through anchored_end).
  Result<RegexNode> Concat(int depth, bool* anchored_end) {
    RegexNode seq;
    seq.kind = RegexKind::kConcat;
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      const char c = p_[i_];
      if (c == '$') {
        const bool at_end = i_ + 1 == p_.size() || p_[i_ + 1] == '|';
        if (anchored_end == nullptr || !at_end)
          return Error("anchor '$' inside the pattern (only at an end)");
        ++i_;
        *anchored_end = true;
        break;
      }
      if (c == '^') return Error("anchor '^' inside the pattern (only at the start)");
      K3_ASSIGN_OR_RETURN(RegexNode atom, Atom(depth));
      K3_ASSIGN_OR_RETURN(atom, Quantifiers(std::move(atom)));
      seq.children.push_back(std::move(atom));
    }
    if (seq.children.empty()) return RegexNode{};
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  // Parses "{n}", "{n,}" or "{n,m}" at i_; nullopt (i_ unchanged) when the text is not a quantifier.
  std::optional<std::pair<uint64_t, uint64_t>> Braces() {
    size_t j = i_ + 1;
    auto number = [&](uint64_t& v) {
      const size_t start = j;
      v = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
        v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(p_[j] - '0'), uint64_t{1} << 40);
        ++j;
      }
      return j > start;
    };
    uint64_t lo = 0, hi = 0;
    if (!number(lo)) return std::nullopt;
    hi = lo;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(hi)) hi = kUnboundedRepeat;
    }
    if (j >= p_.size() || p_[j] != '}') return std::nullopt;
    i_ = j + 1;
    return std::make_pair(lo, hi);
  }

  Result<RegexNode> Quantifiers(RegexNode atom) {
    bool quantified = false;
    while (i_ < p_.size()) {
      uint64_t lo = 0, hi = 0;
      const char c = p_[i_];
      if (c == '*' || c == '+' || c == '?') {
        ++i_;
        lo = c == '+' ? 1 : 0;
        hi = c == '?' ? 1 : kUnboundedRepeat;
      } else if (c == '{') {
        auto braces = Braces();
        if (!braces) break;  // a literal '{'
        std::tie(lo, hi) = *braces;
        if (lo > kMaxRepeatCount || (hi != kUnboundedRepeat && hi > kMaxRepeatCount)) {
          return Error(fmt::format("repeat count above {}", kMaxRepeatCount));
        }
        if (hi < lo) return Error("repeat range {n,m} with m < n");
      } else {
        break;
      }
      if (quantified) return Error("quantifier after a quantifier (nothing to repeat)");
      quantified = true;
      if (Peek('?')) ++i_;  // lazy: same language
      RegexNode repeat;
      repeat.kind = RegexKind::kRepeat;
      repeat.min = static_cast<uint32_t>(lo);
      repeat.max = static_cast<uint32_t>(hi);
      repeat.children.push_back(std::move(atom));
      atom = std::move(repeat);
    }
    return atom;
  }

  // Decodes one UTF-8 code point at i_.
  Result<uint32_t> CodePoint() {
    const auto b0 = static_cast<uint8_t>(p_[i_]);
    int len = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
      ++i_;
      return b0;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3, cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4, cp = b0 & 0x07;
    } else {
      return Error("invalid UTF-8");
    }
    if (i_ + static_cast<size_t>(len) > p_.size()) return Error("invalid UTF-8");
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<uint8_t>(p_[i_ + static_cast<size_t>(k)]);
      if ((b & 0xC0) != 0x80) return Error("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Error("invalid UTF-8");
    }
    i_ += static_cast<size_t>(len);
    return cp;
  }

  Result<uint32_t> HexDigits(int count) {
    uint32_t v = 0;
    for (int k = 0; k < count; ++k) {
      const int h = i_ < p_.size() ? HexValue(p_[i_]) : -1;
      if (h < 0) return Error("malformed hex escape");
      v = v * 16 + static_cast<uint32_t>(h);
      ++i_;
    }
    return v;
  }

  // An escape after '\' (i_ at the letter). in_class: inside [...] (\b is backspace there).
  Result<std::vector<CodeRange>> Escape(bool in_class) {
    if (i_ >= p_.size()) return Error("pattern ends with '\\'");
    const char c = p_[i_];
    auto single = [](uint32_t cp) { return std::vector<CodeRange>{{cp, cp}}; };
    switch (c) {
      case 'd':
        ++i_;
        return Ranges(kDigit);
      case 'D':
        ++i_;
        return ComplementRanges(NormalizeRanges(Ranges(kDigit)));
      case 'w':
        ++i_;
        return Ranges(kWord);
      case 'W':
        ++i_;
        return ComplementRanges(NormalizeRanges(Ranges(kWord)));
      case 's':
        ++i_;
        return Ranges(kSpace);
      case 'S':
        ++i_;
        return ComplementRanges(NormalizeRanges(Ranges(kSpace)));
      case 'n':
        ++i_;
        return single('\n');
      case 'r':
        ++i_;
        return single('\r');
      case 't':
        ++i_;
        return single('\t');
      case 'f':
        ++i_;
        return single('\f');
      case 'v':
        ++i_;
        return single('\v');
      case '0':
        if (i_ + 1 < p_.size() && p_[i_ + 1] >= '0' && p_[i_ + 1] <= '9') return Error("octal escape");
        ++i_;
        return single(0);
      case 'x': {
        ++i_;
        K3_ASSIGN_OR_RETURN(uint32_t v, HexDigits(2));
        return single(v);
      }
      case 'u': {
        ++i_;
        K3_ASSIGN_OR_RETURN(uint32_t v, HexDigits(4));
        if (v >= 0xD800 && v <= 0xDFFF) return Error("surrogate escape \\u (not a code point)");
        return single(v);
      }
      case 'b':
        if (in_class) {
          ++i_;
          return single('\b');
        }
        return Error("word boundary '\\b' (assertions are not supported)");
      case 'B':
        return Error("word boundary '\\B' (assertions are not supported)");
      case 'k':
        return Error("backreference '\\k' (not supported)");
      default:
        break;
    }
    if (c >= '1' && c <= '9') return Error("backreference '\\1'..'\\9' (not supported)");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      return Error(fmt::format("unsupported escape '\\{}'", c));
    }
    K3_ASSIGN_OR_RETURN(uint32_t cp, CodePoint());
    return single(cp);
  }

  // [...] with i_ after '['.
  Result<RegexNode> Class() {
    bool negated = false;
    if (Peek('^')) {
      negated = true;
      ++i_;
    }
    std::vector<CodeRange> ranges;
    bool first = true;
    while (true) {
      if (i_ >= p_.size()) return Error("unterminated character class '['");
      if (p_[i_] == ']' && !first) {
        ++i_;
        break;
      }
      if (p_[i_] == ']') {  // "[]" matches nothing, "[^]" anything (ECMA)
        ++i_;
        break;
      }
      first = false;
      // One class atom: a set (escape class) or a single code point that may start a range.
      std::vector<CodeRange> atom;
      if (p_[i_] == '\\') {
        ++i_;
        K3_ASSIGN_OR_RETURN(atom, Escape(/*in_class=*/true));
      } else {
        K3_ASSIGN_OR_RETURN(uint32_t cp, CodePoint());
        atom = {{cp, cp}};
      }
      const bool range_follows = i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']';
      if (!range_follows) {
        ranges.insert(ranges.end(), atom.begin(), atom.end());
        continue;
      }
      ++i_;  // '-'
      std::vector<CodeRange> end;
      if (p_[i_] == '\\') {
        ++i_;
        K3_ASSIGN_OR_RETURN(end, Escape(/*in_class=*/true));
      } else {
        K3_ASSIGN_OR_RETURN(uint32_t cp, CodePoint());
        end = {{cp, cp}};
      }
      if (atom.size() != 1 || end.size() != 1 || atom[0].lo != atom[0].hi || end[0].lo != end[0].hi) {
        return Error("class range with a class escape as an end");
      }
      if (end[0].lo < atom[0].lo) return Error("class range out of order");
      ranges.push_back({atom[0].lo, end[0].lo});
    }
    ranges = NormalizeRanges(std::move(ranges));
    return ClassNode(negated ? ComplementRanges(ranges) : ranges);
  }

  Result<RegexNode> Atom(int depth) {
    const char c = p_[i_];
    switch (c) {
      case '(': {
        if (depth + 1 > kMaxRegexNesting) return Error("groups nested too deeply");
        ++i_;
        if (Peek('?')) {
          const std::string_view rest = p_.substr(i_);
          if (rest.starts_with("?:")) {
            i_ += 2;
          } else if (rest.starts_with("?=") || rest.starts_with("?!")) {
            return Error("lookahead '(?=' / '(?!' (not supported)");
          } else if (rest.starts_with("?<=") || rest.starts_with("?<!")) {
            return Error("lookbehind '(?<=' / '(?<!' (not supported)");
          } else if (rest.starts_with("?<")) {
            const size_t close = rest.find('>');
            if (close == std::string_view::npos) return Error("unterminated group name '(?<'");
            i_ += close + 1;
          } else {
            return Error("unknown group modifier '(?'");
          }
        }
        K3_ASSIGN_OR_RETURN(RegexNode inner, Alternation(depth + 1));
        if (!Peek(')')) return Error("missing ')'");
        ++i_;
        return inner;
      }
      case ')':
        return Error("unmatched ')'");
      case '[':
        ++i_;
        return Class();
      case '.':
        ++i_;
        return ClassNode(ComplementRanges(NormalizeRanges(Ranges(kLineTerminators))));
      case '*':
      case '+':
      case '?':
        return Error("quantifier with nothing to repeat");
      case '{':
        if (Braces()) return Error("quantifier with nothing to repeat");
        ++i_;
        return ClassNode({{'{', '{'}});
      case '\\': {
        ++i_;
        K3_ASSIGN_OR_RETURN(std::vector<CodeRange> set, Escape(/*in_class=*/false));
        return ClassNode(std::move(set));
      }
      default: {
        K3_ASSIGN_OR_RETURN(uint32_t cp, CodePoint());
        return ClassNode({{cp, cp}});
      }
    }
  }

  std::string_view p_;
  size_t i_ = 0;
};

}  // namespace

std::vector<CodeRange> NormalizeRanges(std::vector<CodeRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  std::vector<CodeRange> merged;
  for (const CodeRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  std::vector<CodeRange> out;
  for (const CodeRange& r : merged) {  // cut out U+D800..U+DFFF
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

std::vector<CodeRange> ComplementRanges(const std::vector<CodeRange>& ranges) {
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (const CodeRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return NormalizeRanges(std::move(out));
}

Result<ParsedRegex> ParseRegex(std::string_view pattern) { return Parser(pattern).Parse(); }

}  // namespace k3::chat::regex
