// Character-level tests of the numeric, tuple and object-count keywords (number_schema.h, object_keys.h,
// grammar_compile.h): which texts minimum / maximum / exclusive bounds / multipleOf, prefixItems,
// minProperties / maxProperties and patternProperties accept at their edges, the shortest completions
// (grammar_distance.h) of bounded values, and the errors that name the keyword.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "src/chat/grammar_compile.h"
#include "src/chat/grammar_distance.h"
#include "src/chat/grammar_matcher.h"

namespace k3::chat::grammar {
namespace {

using nlohmann::json;

std::shared_ptr<const Grammar> MustCompileSchema(const json& schema) {
  GrammarBuilder builder;
  auto value = builder.JsonValue(schema, "schema");
  EXPECT_TRUE(value.ok()) << schema.dump() << ": " << value.status().ToString();
  if (!value.ok()) return nullptr;
  return builder.Finish(*value);
}

std::string SchemaErrorOf(const json& schema) {
  GrammarBuilder builder;
  auto value = builder.JsonValue(schema, "schema");
  return value.ok() ? "(compiled)" : value.status().message();
}

// Walks text; returns the state count (0: refused) and whether it ended complete.
bool WalkText(const std::shared_ptr<const Grammar>& grammar, std::string_view text, bool* complete) {
  Matcher matcher(grammar);
  MatchState state = matcher.Initial();
  MatchState next;
  for (char c : text) {
    if (!matcher.Advance(state, static_cast<uint8_t>(c), next)) return false;
    std::swap(state, next);
  }
  *complete = matcher.IsComplete(state);
  return true;
}
bool MatchesWhole(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  bool complete = false;
  return grammar != nullptr && WalkText(grammar, text, &complete) && complete;
}
bool MatchesPrefix(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  bool complete = false;
  return grammar != nullptr && WalkText(grammar, text, &complete);
}

int64_t ShortestValue(const json& schema) {
  auto g = MustCompileSchema(schema);
  if (g == nullptr) return -1;
  const CompletionDistance distance(g, nullptr);
  return distance.MinLength(g->root);
}

// Hundredths as decimal text: 5 -> "0.05", -250 -> "-2.5", 300 -> "3".
std::string Hundredths(int v) {
  const int a = std::abs(v);
  std::string text = (v < 0 ? "-" : "") + std::to_string(a / 100);
  if (a % 100 != 0) {
    text += a % 10 == 0 ? "." + std::to_string(a % 100 / 10)
                        : (a % 100 < 10 ? ".0" : ".") + std::to_string(a % 100);
  }
  return text;
}

TEST(NumberKeywords, IntegerBoundsAreExactAtEveryEdge) {
  struct Case {
    json schema;
    int lo, hi;  // inclusive range within [-300, 300]
  };
  const Case cases[] = {
      {{{"type", "integer"}, {"minimum", -5}, {"maximum", 12}}, -5, 12},
      {{{"type", "integer"}, {"exclusiveMinimum", -5}, {"exclusiveMaximum", 12}}, -4, 11},
      {{{"type", "integer"}, {"minimum", 0}}, 0, 300},
      {{{"type", "integer"}, {"exclusiveMinimum", 0}}, 1, 300},
      {{{"type", "integer"}, {"maximum", -1}}, -300, -1},
      {{{"type", "integer"}, {"exclusiveMinimum", 0.5}, {"maximum", 99.9}}, 1, 99},
      {{{"type", "integer"}, {"minimum", -100.5}, {"exclusiveMaximum", -9.0}}, -100, -10},
      {{{"type", "integer"}, {"minimum", 7}, {"maximum", 7}}, 7, 7},
      {{{"type", "integer"}, {"minimum", 10}, {"maximum", 200}}, 10, 200},
      // draft 4: boolean exclusives modify minimum / maximum
      {{{"type", "integer"},
        {"minimum", 3},
        {"exclusiveMinimum", true},
        {"maximum", 9},
        {"exclusiveMaximum", false}},
       4,
       9},
  };
  for (const Case& c : cases) {
    auto g = MustCompileSchema(c.schema);
    for (int v = -300; v <= 300; ++v) {
      EXPECT_EQ(MatchesWhole(g, std::to_string(v)), v >= c.lo && v <= c.hi) << c.schema.dump() << " " << v;
    }
    EXPECT_FALSE(MatchesWhole(g, "1.0")) << c.schema.dump();
    EXPECT_FALSE(MatchesWhole(g, "1e1")) << c.schema.dump();
    EXPECT_FALSE(MatchesWhole(g, "007")) << c.schema.dump();
  }
}

TEST(NumberKeywords, NumberBoundsAreExactWithFractions) {
  struct Case {
    json schema;
    int lo, hi;  // inclusive range in hundredths
  };
  const Case cases[] = {
      {{{"type", "number"}, {"minimum", -2.5}, {"exclusiveMaximum", 3.25}}, -250, 324},
      {{{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 1}}, 1, 100},
      {{{"type", "number"}, {"minimum", 0.5}, {"maximum", 0.5}}, 50, 50},
      {{{"type", "number"}, {"minimum", -10.5}, {"maximum", -0.25}}, -1050, -25},
      {{{"type", "number"}, {"exclusiveMinimum", -0.01}, {"exclusiveMaximum", 0.01}}, 0, 0},
      {{{"type", "number"}, {"minimum", 0.1}, {"maximum", 9.99}}, 10, 999},
  };
  for (const Case& c : cases) {
    auto g = MustCompileSchema(c.schema);
    for (int v = -1200; v <= 1200; ++v) {
      EXPECT_EQ(MatchesWhole(g, Hundredths(v)), v >= c.lo && v <= c.hi) << c.schema.dump() << " " << Hundredths(v);
    }
  }
  auto g = MustCompileSchema({{"type", "number"}, {"minimum", -2.5}, {"exclusiveMaximum", 3.25}});
  EXPECT_TRUE(MatchesWhole(g, "3.249999999999999"));
  EXPECT_FALSE(MatchesWhole(g, "3.250"));
  EXPECT_FALSE(MatchesWhole(g, "3.2500000001"));
  EXPECT_TRUE(MatchesWhole(g, "-2.50"));
  EXPECT_FALSE(MatchesWhole(g, "-2.500000000000001"));
  EXPECT_FALSE(MatchesWhole(g, "1e0"));  // no exponent when bounded
  EXPECT_TRUE(MatchesWhole(g, "-0"));    // -0 == 0
  EXPECT_FALSE(MatchesPrefix(g, "4"));   // refused at the first digit that leaves the range
  EXPECT_FALSE(MatchesPrefix(g, "-3"));
  // Zero bounds and the sign of zero.
  auto positive = MustCompileSchema({{"type", "number"}, {"exclusiveMinimum", 0}});
  EXPECT_FALSE(MatchesWhole(positive, "0"));
  EXPECT_FALSE(MatchesWhole(positive, "-0.0"));
  EXPECT_FALSE(MatchesWhole(positive, "0.000"));
  EXPECT_TRUE(MatchesWhole(positive, "0.000000000000001"));
  auto non_negative = MustCompileSchema({{"type", "number"}, {"minimum", 0}});
  EXPECT_TRUE(MatchesWhole(non_negative, "-0.0"));
  EXPECT_FALSE(MatchesWhole(non_negative, "-0.001"));
}

TEST(NumberKeywords, HugeAndTinyBounds) {
  // Beyond the generated digits (15 integer digits): vacuous on the open side.
  auto below_huge = MustCompileSchema({{"type", "number"}, {"maximum", 1e300}, {"minimum", -1e300}});
  EXPECT_TRUE(MatchesWhole(below_huge, "999999999999999.5"));
  EXPECT_TRUE(MatchesWhole(below_huge, "-999999999999999"));
  auto exact = MustCompileSchema({{"type", "integer"}, {"minimum", 999999999999998LL}});
  EXPECT_TRUE(MatchesWhole(exact, "999999999999998"));
  EXPECT_TRUE(MatchesWhole(exact, "999999999999999"));
  EXPECT_FALSE(MatchesWhole(exact, "999999999999997"));
  auto big = MustCompileSchema({{"type", "integer"}, {"maximum", 18446744073709551615ULL}});
  EXPECT_TRUE(MatchesWhole(big, "123456789012345"));
  // A tiny positive lower bound: only numbers with enough fraction digits pass.
  auto tiny = MustCompileSchema({{"type", "number"}, {"exclusiveMinimum", 1e-10}, {"maximum", 1e-9}});
  EXPECT_TRUE(MatchesWhole(tiny, "0.000000001"));
  EXPECT_TRUE(MatchesWhole(tiny, "0.00000000011"));
  EXPECT_FALSE(MatchesWhole(tiny, "0.0000000001"));
  EXPECT_FALSE(MatchesWhole(tiny, "0.0000000010001"));
  EXPECT_FALSE(MatchesWhole(tiny, "0"));
  // 0.1 means 0.1 (its shortest text), not the double's binary expansion.
  auto tenth = MustCompileSchema({{"type", "number"}, {"minimum", 0.1}, {"maximum", 0.3}});
  EXPECT_TRUE(MatchesWhole(tenth, "0.1"));
  EXPECT_TRUE(MatchesWhole(tenth, "0.3"));
  EXPECT_FALSE(MatchesWhole(tenth, "0.30000000000001"));
}

TEST(NumberKeywords, MultipleOfIsExact) {
  auto sevens = MustCompileSchema({{"type", "integer"}, {"multipleOf", 7}, {"minimum", -50}, {"maximum", 50}});
  for (int v = -300; v <= 300; ++v) {
    EXPECT_EQ(MatchesWhole(sevens, std::to_string(v)), v % 7 == 0 && v >= -50 && v <= 50) << v;
  }
  auto quarters = MustCompileSchema({{"type", "number"}, {"multipleOf", 0.25}, {"exclusiveMaximum", 5}});
  for (int v = -1200; v <= 1200; ++v) {
    EXPECT_EQ(MatchesWhole(quarters, Hundredths(v)), v % 25 == 0 && v < 500) << Hundredths(v);
  }
  auto cents = MustCompileSchema({{"type", "number"}, {"multipleOf", 0.01}, {"minimum", 0}});
  EXPECT_TRUE(MatchesWhole(cents, "1.23"));
  EXPECT_TRUE(MatchesWhole(cents, "1.2"));
  EXPECT_TRUE(MatchesWhole(cents, "1999"));
  EXPECT_FALSE(MatchesWhole(cents, "1.234"));
  EXPECT_FALSE(MatchesWhole(cents, "1.230"));  // at most as many fraction digits as the multiple (a subset)
  auto halves = MustCompileSchema({{"type", "integer"}, {"multipleOf", 2.5}});
  EXPECT_TRUE(MatchesWhole(halves, "5"));
  EXPECT_TRUE(MatchesWhole(halves, "-10"));
  EXPECT_FALSE(MatchesWhole(halves, "7"));
  auto thousands = MustCompileSchema({{"type", "integer"}, {"multipleOf", 1000}, {"maximum", 5000}});
  EXPECT_TRUE(MatchesWhole(thousands, "-3000"));
  EXPECT_TRUE(MatchesWhole(thousands, "0"));
  EXPECT_FALSE(MatchesWhole(thousands, "6000"));
  EXPECT_FALSE(MatchesWhole(thousands, "2500"));
  EXPECT_FALSE(MatchesWhole(thousands, "10"));
  // Trailing zeros of the multiple cost no remainder states: 1e6 and 2.5e6.
  auto millions = MustCompileSchema({{"type", "integer"}, {"multipleOf", 1000000}});
  EXPECT_TRUE(MatchesWhole(millions, "3000000"));
  EXPECT_TRUE(MatchesWhole(millions, "-120000000"));
  EXPECT_FALSE(MatchesWhole(millions, "3000100"));
  EXPECT_FALSE(MatchesWhole(millions, "300000"));
  auto two_and_half_millions = MustCompileSchema({{"type", "integer"}, {"multipleOf", 2500000}});
  EXPECT_TRUE(MatchesWhole(two_and_half_millions, "7500000"));
  EXPECT_TRUE(MatchesWhole(two_and_half_millions, "10000000"));
  EXPECT_FALSE(MatchesWhole(two_and_half_millions, "5000001"));
  EXPECT_FALSE(MatchesWhole(two_and_half_millions, "12000000"));
  EXPECT_FALSE(MatchesWhole(two_and_half_millions, "2500"));
}

TEST(NumberKeywords, ShortestCompletionsOfBoundedNumbers) {
  EXPECT_EQ(ShortestValue({{"type", "integer"}, {"minimum", 100}}), 3);                                 // 100
  EXPECT_EQ(ShortestValue({{"type", "integer"}, {"minimum", -5}, {"maximum", -3}}), 2);                 // -3
  EXPECT_EQ(ShortestValue({{"type", "number"}, {"minimum", 0.5}, {"maximum", 0.5}}), 3);                // 0.5
  EXPECT_EQ(ShortestValue({{"type", "integer"}, {"multipleOf", 7}, {"minimum", 10}}), 2);               // 14
  EXPECT_EQ(ShortestValue({{"type", "number"}, {"exclusiveMinimum", 99.99}, {"maximum", 100}}), 3);     // 100
  EXPECT_EQ(ShortestValue({{"type", "number"}, {"exclusiveMinimum", 0}, {"exclusiveMaximum", 1}}), 3);  // 0.1
  EXPECT_EQ(ShortestValue({{"type", "integer"}, {"exclusiveMaximum", -999}}), 5);  // -1000
  // Tuples and property counts.
  EXPECT_EQ(ShortestValue({{"type", "array"},
                           {"prefixItems", {{{"type", "integer"}, {"minimum", 10}}, {{"type", "string"}}}},
                           {"minItems", 2}}),
            7);  // [10,""]
  EXPECT_EQ(ShortestValue({{"type", "object"},
                           {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}},
                           {"additionalProperties", false},
                           {"minProperties", 2}}),
            13);  // {"a":0,"b":0}
  EXPECT_EQ(
      ShortestValue({{"type", "object"}, {"additionalProperties", {{"type", "null"}}}, {"minProperties", 2}}),
      17);  // {"":null,"":null}: additional keys are not checked for repeats (grammar_compile.h)
}

TEST(NumberKeywords, ErrorsNameTheKeyword) {
  EXPECT_EQ(SchemaErrorOf({{"type", "integer"}, {"minimum", "3"}}),
            "schema: minimum: must be a number at #/minimum");
  EXPECT_EQ(SchemaErrorOf({{"type", "number"}, {"exclusiveMinimum", 2}, {"maximum", 2}}),
            "schema: exclusiveMinimum: above maximum (2 >= 2), so no number satisfies both at #");
  EXPECT_EQ(
      SchemaErrorOf({{"type", "integer"}, {"minimum", 1.2}, {"maximum", 1.8}}),
      "schema: minimum: no integer in plain notation with at most 15 integer digits lies in the range at #");
  EXPECT_EQ(
      SchemaErrorOf({{"type", "integer"}, {"minimum", 1e20}}),
      "schema: minimum: no integer in plain notation with at most 15 integer digits lies in the range at #");
  EXPECT_EQ(SchemaErrorOf({{"type", "number"}, {"multipleOf", 0}}),
            "schema: multipleOf: must be greater than 0 at #/multipleOf");
  EXPECT_EQ(SchemaErrorOf({{"type", "number"}, {"multipleOf", -2}}),
            "schema: multipleOf: must be greater than 0 at #/multipleOf");
  EXPECT_NE(SchemaErrorOf({{"type", "integer"}, {"multipleOf", 123457}})
                .find("multipleOf: 123457 needs a remainder automaton above 8192 states"),
            std::string::npos);
  EXPECT_NE(SchemaErrorOf({{"type", "number"}, {"multipleOf", 1e-20}}).find("more than 15 fraction digits"),
            std::string::npos);
  EXPECT_EQ(
      SchemaErrorOf({{"type", "integer"}, {"multipleOf", 10}, {"minimum", 1}, {"maximum", 9}}),
      "schema: multipleOf: no multiple of 10 lies in the range (at most 15 integer digits) at #/multipleOf");
  // Bounds beside a combinator are refused, not ignored.
  EXPECT_EQ(SchemaErrorOf({{"anyOf", {{{"type", "integer"}}}}, {"minimum", 1}}),
            "schema: 'minimum' beside 'anyOf' is not supported (move it into the subschemas) at #");
  // Numeric keywords on a string schema are annotations.
  EXPECT_EQ(SchemaErrorOf({{"type", "string"}, {"minimum", "x"}}), "(compiled)");
}

TEST(TupleKeywords, PrefixItemsThenItems) {
  auto closed = MustCompileSchema({{"type", "array"},
                      {"prefixItems", {{{"type", "integer"}, {"minimum", 0}}, {{"type", "string"}}}},
                      {"items", false}});
  EXPECT_TRUE(MatchesWhole(closed, R"([1,"a"])"));
  EXPECT_TRUE(MatchesWhole(closed, R"([1])"));
  EXPECT_TRUE(MatchesWhole(closed, R"([])"));
  EXPECT_FALSE(MatchesWhole(closed, R"([1,"a",2])"));
  EXPECT_FALSE(MatchesPrefix(closed, R"([1,"a",)"));
  EXPECT_FALSE(MatchesWhole(closed, R"(["a"])"));
  EXPECT_FALSE(MatchesWhole(closed, R"([-1,"a"])"));
  auto pair = MustCompileSchema({{"type", "array"},
                    {"prefixItems", {{{"type", "integer"}}, {{"type", "string"}}}},
                    {"minItems", 2},
                    {"maxItems", 2}});
  EXPECT_TRUE(MatchesWhole(pair, R"([1,"a"])"));
  EXPECT_FALSE(MatchesWhole(pair, R"([1])"));
  EXPECT_FALSE(MatchesWhole(pair, R"([1,"a",null])"));
  auto rest =
      MustCompileSchema({{"type", "array"}, {"prefixItems", {{{"type", "string"}}}}, {"items", {{"type", "boolean"}}}});
  EXPECT_TRUE(MatchesWhole(rest, R"(["x",true,false])"));
  EXPECT_FALSE(MatchesWhole(rest, R"(["x",1])"));
  EXPECT_FALSE(MatchesWhole(rest, R"([true])"));
  // Draft 4-7 tuples: items as an array, additionalItems for the rest.
  auto old = MustCompileSchema({{"type", "array"},
                   {"items", {{{"type", "null"}}, {{"type", "boolean"}}}},
                   {"additionalItems", false}});
  EXPECT_TRUE(MatchesWhole(old, R"([null,true])"));
  EXPECT_FALSE(MatchesWhole(old, R"([null,true,1])"));
  EXPECT_FALSE(MatchesWhole(old, R"([true])"));
  // More items required than a closed tuple has: nothing satisfies it.
  GrammarBuilder builder;
  auto impossible = builder.JsonValue(
      {{"type", "array"}, {"prefixItems", {{{"type", "null"}}}}, {"items", false}, {"minItems", 2}},
      "schema");
  ASSERT_TRUE(impossible.ok());
  builder.UpdateNeeds();
  EXPECT_FALSE(builder.Satisfiable(*impossible));
}

TEST(TupleKeywords, UniqueItemsOfEnumeratedValues) {
  auto tags = MustCompileSchema({{"type", "array"}, {"items", {{"enum", {"a", "b", "ab"}}}}, {"uniqueItems", true}});
  EXPECT_TRUE(MatchesWhole(tags, R"(["a","b","ab"])"));
  EXPECT_TRUE(MatchesWhole(tags, R"(["ab","a"])"));
  EXPECT_TRUE(MatchesWhole(tags, R"([])"));
  EXPECT_FALSE(MatchesPrefix(tags, R"(["a","a")"));
  EXPECT_FALSE(MatchesPrefix(tags, R"(["ab","b","ab")"));
  EXPECT_FALSE(MatchesPrefix(tags, R"(["a","b","ab",)"));  // every value written: no comma
  auto numbers = MustCompileSchema({{"type", "array"}, {"items", {{"enum", {1, 12}}}}, {"uniqueItems", true}});
  EXPECT_TRUE(MatchesWhole(numbers, "[1,12]"));
  EXPECT_TRUE(MatchesWhole(numbers, "[12,1]"));
  EXPECT_FALSE(MatchesWhole(numbers, "[1,1]"));
  EXPECT_FALSE(MatchesWhole(numbers, "[12,12]"));
  auto flags = MustCompileSchema({{"type", "array"}, {"items", {{"type", "boolean"}}}, {"uniqueItems", true}});
  EXPECT_TRUE(MatchesWhole(flags, "[true,false]"));
  EXPECT_FALSE(MatchesWhole(flags, "[true,true]"));
  auto colors = MustCompileSchema(json::parse(R"({"$defs": {"Color": {"enum": ["red", "green"], "type": "string"}},
      "type": "array", "items": {"$ref": "#/$defs/Color"}, "uniqueItems": true, "minItems": 2})"));
  EXPECT_TRUE(MatchesWhole(colors, R"(["green","red"])"));
  EXPECT_FALSE(MatchesWhole(colors, R"(["green"])"));
  EXPECT_FALSE(MatchesPrefix(colors, R"(["green","green")"));
  // More distinct items required than values: nothing satisfies it.
  GrammarBuilder builder;
  auto impossible = builder.JsonValue(
      {{"type", "array"}, {"items", {{"enum", {1, 2}}}}, {"uniqueItems", true}, {"minItems", 3}}, "schema");
  ASSERT_TRUE(impossible.ok());
  builder.UpdateNeeds();
  EXPECT_FALSE(builder.Satisfiable(*impossible));
  // Other items cannot be compared by a grammar: they compile, and the end check compares them
  // (output_schema_check.h); so do enums of more than 32 values and tuples.
  auto strings = MustCompileSchema({{"type", "array"}, {"items", {{"type", "string"}}}, {"uniqueItems", true}});
  EXPECT_TRUE(MatchesWhole(strings, R"(["a","a"])"));
  json many = json::array();
  for (int i = 0; i < 40; ++i) many.push_back(i);
  EXPECT_TRUE(
      MatchesWhole(MustCompileSchema({{"type", "array"}, {"items", {{"enum", many}}}, {"uniqueItems", true}}), "[3,3]"));
  EXPECT_TRUE(MatchesWhole(MustCompileSchema({{"type", "array"},
                            {"prefixItems", {{{"enum", {1, 2}}}}},
                            {"items", {{"enum", {1, 2}}}},
                            {"uniqueItems", true}}),
                      "[1,1]"));
  EXPECT_EQ(
      SchemaErrorOf({{"type", "array"}, {"items", {{"type", "string"}}}, {"uniqueItems", true}, {"maxItems", 1}}),
      "(compiled)");
  EXPECT_EQ(SchemaErrorOf({{"type", "array"}, {"uniqueItems", "yes"}}),
            "schema: must be a boolean at #/uniqueItems");
}

TEST(ObjectKeywords, PropertyCounts) {
  auto two =
      MustCompileSchema({{"type", "object"},
            {"properties",
             {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}, {"c", {{"type", "integer"}}}}},
            {"additionalProperties", false},
            {"minProperties", 2},
            {"maxProperties", 2}});
  EXPECT_TRUE(MatchesWhole(two, R"({"a":1,"b":2})"));
  EXPECT_TRUE(MatchesWhole(two, R"({"a":1,"c":2})"));
  EXPECT_TRUE(MatchesWhole(two, R"({"b":1,"c":2})"));
  EXPECT_FALSE(MatchesWhole(two, R"({"a":1})"));
  EXPECT_FALSE(MatchesWhole(two, R"({})"));
  EXPECT_FALSE(MatchesWhole(two, R"({"a":1,"b":2,"c":3})"));
  EXPECT_FALSE(MatchesPrefix(two, R"({"a":1,"b":2,)"));
  EXPECT_FALSE(MatchesPrefix(two, R"({"c")"));  // after "c" no second member could follow
  auto at_least_one =
      MustCompileSchema({{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}, {"minProperties", 1}});
  EXPECT_FALSE(MatchesWhole(at_least_one, "{}"));
  EXPECT_TRUE(MatchesWhole(at_least_one, R"({"x":1})"));
  EXPECT_TRUE(MatchesWhole(at_least_one, R"({"x":1,"y":2})"));
  auto at_most_one = MustCompileSchema({{"type", "object"},
                           {"properties", {{"id", {{"type", "integer"}}}}},
                           {"required", {"id"}},
                           {"maxProperties", 1}});
  EXPECT_TRUE(MatchesWhole(at_most_one, R"({"id":1})"));
  EXPECT_FALSE(MatchesPrefix(at_most_one, R"({"id":1,)"));
  // Required members beyond maxProperties, or minProperties beyond the members there can be: unsatisfiable.
  for (const json& impossible : {json{{"type", "object"}, {"required", {"a", "b"}}, {"maxProperties", 1}},
                                 json{{"type", "object"},
                                      {"properties", {{"a", json::object()}}},
                                      {"additionalProperties", false},
                                      {"minProperties", 2}}}) {
    GrammarBuilder builder;
    auto value = builder.JsonValue(impossible, "schema");
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    builder.UpdateNeeds();
    EXPECT_FALSE(builder.Satisfiable(*value)) << impossible.dump();
  }
  EXPECT_EQ(SchemaErrorOf({{"type", "object"}, {"minProperties", 3}, {"maxProperties", 2}}),
            "schema: minProperties 3 is above maxProperties 2 at #/minProperties");
  EXPECT_EQ(SchemaErrorOf({{"type", "object"}, {"maxProperties", -1}}),
            "schema: must be a non-negative integer at #/maxProperties");
}

TEST(ObjectKeywords, PatternProperties) {
  auto dict =
      MustCompileSchema({{"type", "object"},
            {"patternProperties", {{"^x_[0-9]+$", {{"type", "integer"}}}, {"^s_", {{"type", "string"}}}}},
            {"maxProperties", 3}});
  EXPECT_TRUE(MatchesWhole(dict, R"({"x_1":3,"s_a":"t"})"));
  EXPECT_TRUE(MatchesWhole(dict, R"({})"));
  EXPECT_FALSE(MatchesWhole(dict, R"({"x_1":"t"})"));
  EXPECT_FALSE(MatchesWhole(dict, R"({"s_a":1})"));
  EXPECT_FALSE(MatchesPrefix(dict, R"({"y)"));  // without additionalProperties only pattern keys are written
  EXPECT_FALSE(MatchesPrefix(dict, R"({"x_1a")"));
  EXPECT_FALSE(MatchesPrefix(dict, R"({"x_1":1,"x_2":2,"x_3":3,)"));
  auto mixed = MustCompileSchema({{"type", "object"},
                     {"properties", {{"id", {{"type", "integer"}}}}},
                     {"patternProperties", {{"^tag_", {{"type", "string"}}}}},
                     {"additionalProperties", {{"type", "boolean"}}}});
  EXPECT_TRUE(MatchesWhole(mixed, R"({"id":1,"tag_a":"v","zz":true})"));
  EXPECT_FALSE(MatchesWhole(mixed, R"({"tag_a":true})"));
  EXPECT_FALSE(MatchesWhole(mixed, R"({"zz":"v"})"));
  EXPECT_FALSE(MatchesPrefix(mixed, R"({"id":1,"id")"));  // a declared name is not an additional key
  // Keys matching two patterns are generated for neither (their values would have to satisfy both).
  auto overlapping =
      MustCompileSchema({{"type", "object"},
            {"patternProperties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}}});
  EXPECT_TRUE(MatchesWhole(overlapping, R"({"a":1,"b":2})"));
  EXPECT_FALSE(MatchesPrefix(overlapping, R"({"ab")"));
  EXPECT_NE(SchemaErrorOf({{"type", "object"},
                     {"properties", {{"tag_x", {{"type", "integer"}}}}},
                     {"patternProperties", {{"^tag_", {{"type", "string"}}}}}})
                .find("property 'tag_x' also matches patternProperties '^tag_'"),
            std::string::npos);
  EXPECT_NE(SchemaErrorOf({{"type", "object"}, {"patternProperties", {{"a(?=b)", {}}}}}).find("lookahead"),
            std::string::npos);
  EXPECT_EQ(SchemaErrorOf({{"type", "object"}, {"patternProperties", 3}}),
            "schema: must be an object at #/patternProperties");
}

// `not` is enforced in the grammar where that is exact: a `not` of types drops those types, and a
// finite value set (enum, const, boolean, null) loses the values the subschema matches. Any other `not`
// compiles and is left to the end check; its subschema is held to the supported keywords.
TEST(NotKeyword, ExcludedTypesAndValues) {
  auto not_null = MustCompileSchema({{"type", {"string", "null"}}, {"not", {{"type", "null"}}}});
  EXPECT_TRUE(MatchesWhole(not_null, R"("x")"));
  EXPECT_FALSE(MatchesWhole(not_null, "null"));
  auto not_number = MustCompileSchema({{"not", {{"type", "number"}, {"title", "no numbers"}}}});
  EXPECT_FALSE(MatchesWhole(not_number, "1"));
  EXPECT_FALSE(MatchesWhole(not_number, "1.5"));
  EXPECT_TRUE(MatchesWhole(not_number, "true"));
  auto colors = MustCompileSchema({{"enum", {"red", "green", "blue"}}, {"not", {{"const", "green"}}}});
  EXPECT_TRUE(MatchesWhole(colors, R"("red")"));
  EXPECT_FALSE(MatchesWhole(colors, R"("green")"));
  auto small = MustCompileSchema({{"enum", {1, 5, 10}}, {"not", {{"type", "integer"}, {"minimum", 5}}}});
  EXPECT_TRUE(MatchesWhole(small, "1"));
  EXPECT_FALSE(MatchesWhole(small, "5"));
  EXPECT_FALSE(MatchesWhole(small, "10"));
  auto only_false = MustCompileSchema({{"type", "boolean"}, {"not", {{"const", true}}}});
  EXPECT_TRUE(MatchesWhole(only_false, "false"));
  EXPECT_FALSE(MatchesWhole(only_false, "true"));
  // Every value excluded: nothing satisfies it.
  GrammarBuilder builder;
  auto none = builder.JsonValue({{"enum", {1, 2}}, {"not", {{"type", "integer"}}}}, "schema");
  ASSERT_TRUE(none.ok());
  builder.UpdateNeeds();
  EXPECT_FALSE(builder.Satisfiable(*none));
  // Not enforceable here: compiled, left to the end check.
  auto not_empty = MustCompileSchema({{"type", "string"}, {"not", {{"const", ""}}}});
  EXPECT_TRUE(MatchesWhole(not_empty, R"("")"));
  EXPECT_EQ(SchemaErrorOf({{"type", "string"}, {"not", {{"pattern", "a(?=b)"}}}}).find("#/not/pattern") !=
                std::string::npos,
            true);
  EXPECT_EQ(SchemaErrorOf({{"not", {{"contains", {{"type", "null"}}}}}}),
            "schema: keyword 'contains' is not supported in constrained output at #/not");
  EXPECT_EQ(SchemaErrorOf({{"not", 3}}), "schema: a schema must be an object or a boolean at #/not");
}

}  // namespace
}  // namespace k3::chat::grammar
