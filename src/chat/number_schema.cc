// Numeric keywords -> bounded number DFA (see number_schema.h).
#include "src/chat/number_schema.h"

#include <cmath>
#include <vector>

#include "src/chat/grammar.h"

namespace k3::chat::grammar {
namespace {

using nlohmann::json;

// An exact decimal: (-1)^negative * int_digits.frac_digits, without leading zeros in int_digits ("" for
// zero) and without trailing zeros in frac_digits.
struct Decimal {
  bool negative = false;
  std::string int_digits;
  std::string frac_digits;
  bool IsZero() const { return int_digits.empty() && frac_digits.empty(); }
};

// Parses [-]digits[.digits][e[+-]digits] (what nlohmann and fmt write) into a Decimal; false on
// anything else or an exponent beyond the double range.
bool ParseDecimal(const std::string& text, Decimal* out) {
  size_t i = 0;
  Decimal d;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string digits;  // mantissa digits without the point
  int64_t point = -1;  // digits before the point
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      if (point >= 0) return false;
      point = static_cast<int64_t>(digits.size());
    } else if (text[i] >= '0' && text[i] <= '9') {
      digits += text[i];
    } else {
      return false;
    }
  }
  if (digits.empty()) return false;
  if (point < 0) point = static_cast<int64_t>(digits.size());
  if (i < text.size()) {
    const std::string exponent = text.substr(i + 1);
    if (exponent.empty() || exponent.size() > 5) return false;
    size_t used = 0;
    const int value = std::stoi(exponent, &used);
    if (used != exponent.size() || value < -400 || value > 400) return false;
    point += value;
  }
  // Place the point: pad with zeros on either side.
  if (point < 0) {
    digits.insert(0, static_cast<size_t>(-point), '0');
    point = 0;
  }
  if (point > static_cast<int64_t>(digits.size()))
    digits.append(static_cast<size_t>(point) - digits.size(), '0');
  d.int_digits = digits.substr(0, static_cast<size_t>(point));
  d.frac_digits = digits.substr(static_cast<size_t>(point));
  d.int_digits.erase(0, std::min(d.int_digits.find_first_not_of('0'), d.int_digits.size()));
  const size_t last = d.frac_digits.find_last_not_of('0');
  d.frac_digits.resize(last == std::string::npos ? 0 : last + 1);
  if (d.IsZero()) d.negative = false;
  *out = std::move(d);
  return true;
}

// The exact decimal a JSON number means: integers as written, doubles as their shortest round-trip text.
Result<Decimal> DecimalOf(const json& value, const std::string& keyword, const std::string& at) {
  if (!value.is_number()) return InvalidArgument("{}: must be a number at {}", keyword, at);
  std::string text;
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d)) return InvalidArgument("{}: must be a finite number at {}", keyword, at);
    text = fmt::format("{}", d);
  } else {
    text = value.dump();
  }
  Decimal decimal;
  if (!ParseDecimal(text, &decimal)) {
    return InvalidArgument("{}: {} is not a number constrained output can compare with at {}", keyword, text,
                           at);
  }
  return decimal;
}

enum Order : uint32_t { kLess = 0, kEqual = 1, kGreater = 2 };

Order CompareDigits(char a, char b) { return a < b ? kLess : (a > b ? kGreater : kEqual); }
Order Reverse(Order o) { return o == kLess ? kGreater : (o == kGreater ? kLess : kEqual); }

// Number text phases shared by the filters: start, after '-', integer digits, fraction digits.
enum Phase : uint32_t { kStart = 0, kMinus = 1, kInteger = 2, kFraction = 3 };

// Compares the number being read with one bound, digit by digit. State bits: phase (2), negative (1),
// integer part "0" (1), digit count of the current part (5), order of the current part's digits so far
// against the bound's (2), order of the integer parts once the fraction started (2).
class BoundFilter {
 public:
  BoundFilter(Decimal bound, bool lower, bool exclusive)
      : bound_(std::move(bound)), lower_(lower), exclusive_(exclusive) {}

  regex::ByteFilter AsFilter() const {
    regex::ByteFilter filter;
    filter.start = Pack(State{});
    filter.next = [this](int32_t state, uint8_t byte) { return Next(Unpack(state), byte); };
    filter.accepting = [this](int32_t state) { return Accepts(Unpack(state)); };
    return filter;
  }

 private:
  struct State {
    uint32_t phase = kStart;
    bool negative = false;
    bool zero = false;
    uint32_t count = 0;
    Order digits = kEqual;
    Order integer = kEqual;
  };
  static int32_t Pack(const State& s) {
    return static_cast<int32_t>(s.phase | uint32_t{s.negative} << 2 | uint32_t{s.zero} << 3 |
                                std::min<uint32_t>(s.count, 31) << 4 | uint32_t{s.digits} << 9 |
                                uint32_t{s.integer} << 11);
  }
  static State Unpack(int32_t packed) {
    const auto p = static_cast<uint32_t>(packed);
    State s;
    s.phase = p & 3;
    s.negative = (p >> 2 & 1) != 0;
    s.zero = (p >> 3 & 1) != 0;
    s.count = p >> 4 & 31;
    s.digits = static_cast<Order>(p >> 9 & 3);
    s.integer = static_cast<Order>(p >> 11 & 3);
    return s;
  }

  // |number| against |bound| by the integer digits read so far (the integer part ends here).
  Order IntegerOrder(const State& s) const {
    const size_t length = s.zero ? 0 : s.count;
    if (length != bound_.int_digits.size()) return length < bound_.int_digits.size() ? kLess : kGreater;
    return s.digits;
  }

  Order MagnitudeOrder(const State& s) const {
    if (s.phase == kInteger) {
      const Order integer = IntegerOrder(s);
      return integer == kEqual && !bound_.frac_digits.empty() ? kLess : integer;
    }
    if (s.integer != kEqual) return s.integer;
    if (s.digits != kEqual) return s.digits;
    return s.count < bound_.frac_digits.size() ? kLess : kEqual;  // the bound has more nonzero digits
  }

  bool Accepts(const State& s) const {
    if (s.phase != kInteger && s.phase != kFraction) return false;
    const Order magnitude = MagnitudeOrder(s);
    Order order = magnitude;
    if (!s.negative && bound_.negative) {
      order = kGreater;
    } else if (s.negative && !bound_.negative) {
      order = bound_.IsZero() && magnitude == kEqual ? kEqual : kLess;  // -0 equals 0
    } else if (s.negative) {
      order = Reverse(magnitude);
    }
    if (order == kEqual) return !exclusive_;
    return lower_ ? order == kGreater : order == kLess;
  }

  int32_t Next(State s, uint8_t byte) const {
    const bool digit = byte >= '0' && byte <= '9';
    switch (s.phase) {
      case kStart:
      case kMinus:
        if (s.phase == kStart && byte == '-') {
          s.phase = kMinus;
          s.negative = true;
          return Pack(s);
        }
        if (!digit) return -1;
        s.phase = kInteger;
        if (byte == '0') {
          s.zero = true;
          return Pack(s);
        }
        return Pack(IntegerDigit(s, static_cast<char>(byte)));
      case kInteger:
        if (digit) return s.zero ? -1 : Pack(IntegerDigit(s, static_cast<char>(byte)));
        if (byte != '.') return -1;
        s.integer = IntegerOrder(s);
        s.phase = kFraction;
        s.count = 0;
        s.digits = kEqual;
        return Pack(s);
      case kFraction:
        if (!digit) return -1;
        if (s.integer == kEqual && s.digits == kEqual) {
          const char b = s.count < bound_.frac_digits.size() ? bound_.frac_digits[s.count] : '0';
          s.digits = CompareDigits(static_cast<char>(byte), b);
        }
        ++s.count;
        return s.count > 31 ? -1 : Pack(s);
      default:
        return -1;
    }
  }

  State IntegerDigit(State s, char c) const {
    if (s.digits == kEqual && s.count < bound_.int_digits.size()) {
      s.digits = CompareDigits(c, bound_.int_digits[s.count]);
    }
    ++s.count;
    return s;
  }

  Decimal bound_;
  bool lower_;
  bool exclusive_;
};

// Multiples of m = M * 10^z * 10^-scale (M without trailing zeros): at most `scale` fraction digits, and
// the digits read as an integer X (the value times 10^scale, the fraction padded with zeros) are a
// multiple of M * 10^z. X is tracked as P * 10^k with k <= z trailing zeros split off and P mod M, so
// there are about M * (z + 1) * (scale + 1) states rather than m's scaled value.
class MultipleFilter {
 public:
  MultipleFilter(uint64_t divisor, uint32_t zeros, uint32_t scale)
      : divisor_(divisor), zeros_(zeros), scale_(scale) {}

  regex::ByteFilter AsFilter() const {
    regex::ByteFilter filter;
    filter.start = Pack(State{});
    filter.next = [this](int32_t state, uint8_t byte) { return Next(Unpack(state), byte); };
    filter.accepting = [this](int32_t state) { return Accepts(Unpack(state)); };
    return filter;
  }

 private:
  struct State {
    uint32_t phase = kStart;
    uint32_t fraction = 0;   // fraction digits read
    uint32_t k = 0;          // trailing zeros split off X (at most zeros_)
    bool nonzero = false;    // a nonzero digit was read (else X == 0)
    uint64_t remainder = 0;  // P mod divisor_
  };
  static int32_t Pack(const State& s) {
    return static_cast<int32_t>(s.phase | s.fraction << 2 | s.k << 7 | uint32_t{s.nonzero} << 11 |
                                static_cast<uint32_t>(s.remainder) << 12);
  }
  static State Unpack(int32_t packed) {
    const auto p = static_cast<uint32_t>(packed);
    State s;
    s.phase = p & 3;
    s.fraction = p >> 2 & 31;
    s.k = p >> 7 & 15;
    s.nonzero = (p >> 11 & 1) != 0;
    s.remainder = p >> 12;
    return s;
  }

  // X := X * 10 + digit.
  State Digit(State s, uint32_t digit) const {
    if (digit == 0) {
      if (!s.nonzero) return s;
      if (s.k < zeros_) {
        ++s.k;
      } else {
        s.remainder = s.remainder * 10 % divisor_;
      }
      return s;
    }
    for (uint32_t i = 0; i <= s.k; ++i) s.remainder = s.remainder * 10 % divisor_;
    s.remainder = (s.remainder + digit) % divisor_;
    s.k = 0;
    s.nonzero = true;
    return s;
  }

  bool Accepts(State s) const {
    if (s.phase != kInteger && s.phase != kFraction) return false;
    for (uint32_t f = s.fraction; f < scale_; ++f) s = Digit(s, 0);
    return !s.nonzero || (s.k == zeros_ && s.remainder == 0);
  }

  int32_t Next(State s, uint8_t byte) const {
    const bool digit = byte >= '0' && byte <= '9';
    if (s.phase == kStart && byte == '-') {
      s.phase = kMinus;
      return Pack(s);
    }
    if (digit && s.phase != kFraction) {
      s.phase = kInteger;
      return Pack(Digit(s, byte - '0'));
    }
    if (byte == '.' && s.phase == kInteger) {
      s.phase = kFraction;
      return Pack(s);
    }
    if (digit && s.phase == kFraction && s.fraction < scale_) {
      ++s.fraction;
      return Pack(Digit(s, byte - '0'));
    }
    return -1;
  }

  uint64_t divisor_;
  uint32_t zeros_;
  uint32_t scale_;
};

constexpr const char* kBoundKeywords[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

}  // namespace

bool HasNumberKeywords(const json& schema) {
  if (!schema.is_object()) return false;
  for (const char* keyword : kBoundKeywords) {
    if (schema.contains(keyword)) return true;
  }
  return schema.contains("multipleOf");
}

Result<std::shared_ptr<const regex::ByteDfa>> CompileNumberKeywords(const json& schema, bool integer,
                                                                    const std::string& ptr) {
  const std::string syntax =
      fmt::format("-?(0|[1-9][0-9]{{0,{}}}){}", kMaxIntegerDigits - 1,
                  integer ? "" : fmt::format("(\\.[0-9]{{1,{}}})?", kMaxFractionDigits));
  regex::RegexOptions options;
  options.full_match = true;
  options.max_dfa_states = kMaxNumberDfaStates;
  K3_ASSIGN_OR_RETURN(regex::ByteDfa dfa, regex::CompileRegex(syntax, options));

  // The bounds: numbers (draft 6+) or, for the exclusive ones, draft-4 booleans beside minimum / maximum.
  struct Bound {
    std::string keyword;
    Decimal value;
    double approx = 0;
    bool lower = false;
    bool exclusive = false;
  };
  std::vector<Bound> bounds;
  for (const char* keyword : kBoundKeywords) {
    if (!schema.contains(keyword)) continue;
    const json& v = schema[keyword];
    const std::string at = ptr + "/" + keyword;
    const bool lower = std::string_view(keyword).find("inimum") != std::string_view::npos;
    const bool exclusive = std::string_view(keyword).starts_with("exclusive");
    if (exclusive && v.is_boolean()) continue;  // draft 4: modifies minimum / maximum below
    K3_ASSIGN_OR_RETURN(Decimal value, DecimalOf(v, keyword, at));
    bool draft4_exclusive = false;
    const char* modifier = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    if (!exclusive && schema.contains(modifier) && schema[modifier].is_boolean()) {
      draft4_exclusive = schema[modifier].get<bool>();
    }
    bounds.push_back(Bound{keyword, std::move(value), v.get<double>(), lower, exclusive || draft4_exclusive});
  }
  for (const Bound& lo : bounds) {
    for (const Bound& hi : bounds) {
      if (!lo.lower || hi.lower) continue;
      if (lo.approx > hi.approx || (lo.approx == hi.approx && (lo.exclusive || hi.exclusive))) {
        return InvalidArgument("{}: above {} ({} {} {}), so no number satisfies both at {}", lo.keyword,
                               hi.keyword, schema[lo.keyword].dump(), lo.approx == hi.approx ? ">=" : ">",
                               schema[hi.keyword].dump(), ptr);
      }
    }
  }
  for (const Bound& bound : bounds) {
    const BoundFilter filter(bound.value, bound.lower, bound.exclusive);
    K3_ASSIGN_OR_RETURN(dfa, regex::Intersect(dfa, filter.AsFilter(), kMaxNumberDfaStates,
                                              bound.keyword + " at " + ptr + "/" + bound.keyword));
  }
  if (dfa.Empty()) {
    return InvalidArgument(
        "{}: no {} in plain notation with at most {} integer digits lies in the range at {}",
        bounds.front().keyword, integer ? "integer" : "number", kMaxIntegerDigits, ptr);
  }

  if (schema.contains("multipleOf")) {
    const std::string at = ptr + "/multipleOf";
    K3_ASSIGN_OR_RETURN(Decimal m, DecimalOf(schema["multipleOf"], "multipleOf", at));
    if (m.negative || m.IsZero()) return InvalidArgument("multipleOf: must be greater than 0 at {}", at);
    if (m.frac_digits.size() > kMaxFractionDigits) {
      return InvalidArgument("multipleOf: more than {} fraction digits is not supported at {}",
                             kMaxFractionDigits, at);
    }
    // m = divisor * 10^zeros * 10^-scale.
    std::string scaled = m.int_digits + m.frac_digits;
    scaled.erase(0, std::min(scaled.find_first_not_of('0'), scaled.size()));
    const size_t last = scaled.find_last_not_of('0');
    const auto zeros = static_cast<uint32_t>(scaled.size() - last - 1);
    scaled.resize(last + 1);
    const auto scale = static_cast<uint32_t>(m.frac_digits.size());
    if (zeros > kMaxIntegerDigits) {
      return InvalidArgument("multipleOf: no nonzero multiple of {} has at most {} integer digits at {}",
                             schema["multipleOf"].dump(), kMaxIntegerDigits, at);
    }
    if (scaled.size() > 9 || std::stoull(scaled) * (zeros + 1) * (scale + 1) > kMaxNumberDfaStates) {
      return InvalidArgument(
          "multipleOf: {} needs a remainder automaton above {} states (its significant digits {}, times its "
          "trailing zeros + 1, times its fraction digits + 1), which constrained output does not build at {}",
          schema["multipleOf"].dump(), kMaxNumberDfaStates, scaled, at);
    }
    const MultipleFilter filter(std::stoull(scaled), zeros, scale);
    K3_ASSIGN_OR_RETURN(dfa,
                        regex::Intersect(dfa, filter.AsFilter(), kMaxNumberDfaStates, "multipleOf at " + at));
    if (dfa.Empty()) {
      return InvalidArgument(
          "multipleOf: no multiple of {} lies in the range (at most {} integer digits) at {}",
          schema["multipleOf"].dump(), kMaxIntegerDigits, at);
    }
  }
  return std::make_shared<const regex::ByteDfa>(std::move(dfa));
}

}  // namespace k3::chat::grammar
