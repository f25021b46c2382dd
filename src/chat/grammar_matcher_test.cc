// Character-level tests of the schema grammar: which JSON texts each keyword accepts and rejects, the
// number / string / UTF-8 rules, the marker filter, nesting limits and schema errors.
#include <gtest/gtest.h>

#include <string>

#include "src/chat/grammar_compile.h"
#include "src/chat/grammar_marker_filter.h"
#include "src/chat/grammar_matcher.h"

namespace k3::chat::grammar {
namespace {

using nlohmann::json;

struct Compiled {
  std::shared_ptr<const Grammar> grammar;
  Status status;
};

Compiled Compile(const json& schema) {
  GrammarBuilder builder;
  auto value = builder.JsonValue(schema, "schema");
  if (!value.ok()) return {nullptr, value.status()};
  return {builder.Finish(*value), OkStatus()};
}

// The whole text is a complete value of the grammar.
bool Matches(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  if (grammar == nullptr) return false;
  Matcher matcher(grammar);
  MatchState state = matcher.Initial();
  MatchState next;
  for (char c : text) {
    if (!matcher.Advance(state, static_cast<uint8_t>(c), next)) return false;
    std::swap(state, next);
  }
  return matcher.IsComplete(state);
}

// The text is a prefix of some complete value.
bool IsPrefix(const std::shared_ptr<const Grammar>& grammar, std::string_view text) {
  if (grammar == nullptr) return false;
  Matcher matcher(grammar);
  MatchState state = matcher.Initial();
  MatchState next;
  for (char c : text) {
    if (!matcher.Advance(state, static_cast<uint8_t>(c), next)) return false;
    std::swap(state, next);
  }
  return true;
}

std::shared_ptr<const Grammar> Must(const json& schema) {
  Compiled c = Compile(schema);
  EXPECT_TRUE(c.status.ok()) << c.status.ToString();
  return c.grammar;
}

TEST(GrammarMatcher, StringEscapesAndUtf8) {
  auto g = Must({{"type", "string"}});
  EXPECT_TRUE(Matches(g, R"("")"));
  EXPECT_TRUE(Matches(g, R"("a\n\"\\\/\b\f\r\t\u00e9\uD83D\uDE00x")"));
  EXPECT_TRUE(Matches(g, "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\""));
  EXPECT_FALSE(Matches(g, R"("\x")"));
  EXPECT_FALSE(Matches(g, R"("\ud800")"));           // lone high surrogate
  EXPECT_FALSE(Matches(g, R"("\udc00")"));           // lone low surrogate
  EXPECT_FALSE(Matches(g, R"("\ud800\u0041")"));     // high surrogate not followed by a low one
  EXPECT_FALSE(Matches(g, "\"a\nb\""));              // raw control character
  EXPECT_FALSE(Matches(g, "\"\xC3\x28\""));          // bad continuation
  EXPECT_FALSE(Matches(g, "\"\xC0\xAF\""));          // overlong
  EXPECT_FALSE(Matches(g, "\"\xED\xA0\x80\""));      // UTF-16 surrogate encoded in UTF-8
  EXPECT_FALSE(Matches(g, "\"\xF4\x90\x80\x80\""));  // above U+10FFFF
  EXPECT_FALSE(Matches(g, R"("abc)"));
  EXPECT_FALSE(Matches(g, R"( "a")"));  // no insignificant whitespace
}

TEST(GrammarMatcher, MarkerNamesNeverAppearInText) {
  auto g = Must({{"type", "string"}});
  for (std::string_view marker : {"<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>", "[EOS]"}) {
    EXPECT_FALSE(Matches(g, "\"x" + std::string(marker) + "\"")) << marker;
  }
  EXPECT_TRUE(Matches(g, R"("\u003c|open|>")"));
  EXPECT_TRUE(Matches(g, R"("<|x| [EOS <|sep|")"));
  // A const containing a marker is written with an escape, and still matches the value.
  auto c = Must({{"const", "a<|sep|>b[EOS]"}});
  EXPECT_TRUE(Matches(c, R"("a\u003c|sep|>b\u005bEOS]")"));
  EXPECT_EQ(json::parse(R"("a\u003c|sep|>b\u005bEOS]")"), "a<|sep|>b[EOS]");
}

TEST(GrammarMatcher, Numbers) {
  auto n = Must({{"type", "number"}});
  for (const char* ok : {"0", "-0", "12", "1.5", "-1.5e10", "1E+2", "0.25e-07", "123456789012345"}) {
    EXPECT_TRUE(Matches(n, ok)) << ok;
  }
  for (const char* bad : {"01", "1.", ".5", "1e", "+1", "-", "1234567890123456", "1e123", "1.5.2"}) {
    EXPECT_FALSE(Matches(n, bad)) << bad;
  }
  auto i = Must({{"type", "integer"}});
  EXPECT_TRUE(Matches(i, "-42"));
  EXPECT_FALSE(Matches(i, "1.5"));
  EXPECT_FALSE(Matches(i, "1e2"));
}

TEST(GrammarMatcher, LiteralsAndTypeLists) {
  EXPECT_TRUE(Matches(Must({{"type", "boolean"}}), "false"));
  EXPECT_FALSE(Matches(Must({{"type", "boolean"}}), "null"));
  EXPECT_TRUE(Matches(Must({{"type", "null"}}), "null"));
  auto e = Must({{"enum", {"red", 1, nullptr, json::array({1, 2}), {{"k", "v"}}}}});
  for (const char* ok : {R"("red")", "1", "null", "[1,2]", R"({"k":"v"})"}) EXPECT_TRUE(Matches(e, ok)) << ok;
  EXPECT_FALSE(Matches(e, R"("blue")"));
  EXPECT_FALSE(Matches(e, "12"));
  auto filtered = Must({{"type", "string"}, {"enum", {"a", 1}}});
  EXPECT_TRUE(Matches(filtered, R"("a")"));
  EXPECT_FALSE(Matches(filtered, "1"));
  auto c = Must({{"const", 3}});
  EXPECT_TRUE(Matches(c, "3"));
  EXPECT_FALSE(Matches(c, "4"));
  auto list = Must({{"type", {"string", "null"}}});
  EXPECT_TRUE(Matches(list, "null"));
  EXPECT_TRUE(Matches(list, R"("x")"));
  EXPECT_FALSE(Matches(list, "1"));
  // Numbers from an enum that are prefixes of each other.
  auto prefixes = Must({{"enum", {1, 12, 123}}});
  EXPECT_TRUE(Matches(prefixes, "1"));
  EXPECT_TRUE(Matches(prefixes, "12"));
  EXPECT_FALSE(Matches(prefixes, "124"));
}

TEST(GrammarMatcher, ObjectsPropertiesRequiredAdditional) {
  const json schema = {{"type", "object"},
                       {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "string"}}}}},
                       {"required", {"b"}},
                       {"additionalProperties", false}};
  auto g = Must(schema);
  EXPECT_TRUE(Matches(g, R"({"b":"x"})"));
  EXPECT_TRUE(Matches(g, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(Matches(g, R"({"a":1})"));  // b is required
  EXPECT_FALSE(Matches(g, R"({})"));
  EXPECT_FALSE(Matches(g, R"({"b":"x","a":1})"));  // fixed (sorted) order
  EXPECT_FALSE(Matches(g, R"({"b":"x","c":1})"));  // no additional properties
  EXPECT_FALSE(Matches(g, R"({"a":"1","b":"x"})"));
  EXPECT_FALSE(Matches(g, R"({"a":1,})"));
  EXPECT_FALSE(Matches(g, R"({"b":"x" })"));

  auto open = Must({{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}});
  EXPECT_TRUE(Matches(open, R"({})"));
  EXPECT_TRUE(Matches(open, R"({"a":1,"zz":[true,{"q":null}]})"));
  EXPECT_TRUE(Matches(open, R"({"other":"x","more":1})"));
  EXPECT_FALSE(Matches(open, R"({"zz":1,"a":1})"));  // extra keys never equal a declared name
  EXPECT_FALSE(IsPrefix(open, R"({"x":1,"a":)"));
  EXPECT_TRUE(IsPrefix(open, R"({"ab":)"));        // a longer key than a declared name is an extra key
  EXPECT_FALSE(Matches(open, R"({"\u0061":1})"));  // extra keys are written without escapes

  auto typed = Must({{"type", "object"}, {"additionalProperties", {{"type", "boolean"}}}});
  EXPECT_TRUE(Matches(typed, R"({"x":true,"y":false})"));
  EXPECT_FALSE(Matches(typed, R"({"x":1})"));

  // A required name that `properties` does not list takes the additionalProperties schema.
  auto implicit =
      Must({{"type", "object"}, {"required", {"n"}}, {"additionalProperties", {{"type", "null"}}}});
  EXPECT_TRUE(Matches(implicit, R"({"n":null})"));
  EXPECT_FALSE(Matches(implicit, R"({})"));
}

TEST(GrammarMatcher, ArraysItemsAndBounds) {
  auto g = Must({{"type", "array"}, {"items", {{"type", "integer"}}}, {"minItems", 1}, {"maxItems", 3}});
  EXPECT_TRUE(Matches(g, "[1]"));
  EXPECT_TRUE(Matches(g, "[1,2,3]"));
  EXPECT_FALSE(Matches(g, "[]"));
  EXPECT_FALSE(Matches(g, "[1,2,3,4]"));
  EXPECT_FALSE(Matches(g, "[1,\"a\"]"));
  EXPECT_FALSE(Matches(g, "[1,]"));
  auto any = Must({{"type", "array"}});
  EXPECT_TRUE(Matches(any, R"([1,"a",null,[],{}])"));
}

TEST(GrammarMatcher, AnyOfOneOfAndRefs) {
  const json schema = {
      {"$defs",
       {{"point",
         {{"type", "object"},
          {"properties", {{"x", {{"type", "number"}}}}},
          {"required", {"x"}},
          {"additionalProperties", false}}},
        {"name",
         {{"type", "object"},
          {"properties", {{"xy", {{"type", "string"}}}}},
          {"required", {"xy"}},
          {"additionalProperties", false}}}}},
      {"anyOf", {{{"$ref", "#/$defs/point"}}, {{"$ref", "#/$defs/name"}}, {{"type", "null"}}}}};
  auto g = Must(schema);
  EXPECT_TRUE(Matches(g, R"({"x":1})"));
  EXPECT_TRUE(Matches(g, R"({"xy":"s"})"));  // shares the key prefix "x with the other branch
  EXPECT_TRUE(Matches(g, "null"));
  EXPECT_FALSE(Matches(g, R"({"x":"s"})"));
  auto one = Must({{"oneOf", {{{"type", "string"}}, {{"type", "integer"}}}}});
  EXPECT_TRUE(Matches(one, "5"));
  EXPECT_TRUE(Matches(one, R"("5")"));
  auto defs = Must({{"definitions", {{"flag", {{"type", "boolean"}}}}},
                    {"type", "object"},
                    {"properties", {{"f", {{"$ref", "#/definitions/flag"}}}}},
                    {"additionalProperties", false}});
  EXPECT_TRUE(Matches(defs, R"({"f":true})"));
  EXPECT_FALSE(Matches(defs, R"({"f":1})"));
  auto all = Must({{"allOf", {{{"type", "null"}}}}});
  EXPECT_TRUE(Matches(all, "null"));
}

TEST(GrammarMatcher, RecursiveSchemaWithinTheNestingLimit) {
  const json tree = {
      {"$defs",
       {{"node",
         {{"type", "object"},
          {"properties", {{"children", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}}}}},
          {"additionalProperties", false}}}}},
      {"$ref", "#/$defs/node"}};
  auto g = Must(tree);
  EXPECT_TRUE(Matches(g, R"({"children":[{},{"children":[{"children":[]}]}]})"));
  // Each level is an object and an array: 15 levels and the innermost {} use 31 of the 32.
  std::string deep;
  for (int i = 0; i < 15; ++i) deep += R"({"children":[)";
  deep += "{}";
  for (int i = 0; i < 15; ++i) deep += "]}";
  EXPECT_TRUE(Matches(g, deep));
  std::string too_deep = R"({"children":[)" + deep + "]}";
  EXPECT_FALSE(Matches(g, too_deep));
  // One more level: the innermost '{' would be the 33rd container.
  EXPECT_TRUE(IsPrefix(g, too_deep.substr(0, too_deep.size() - 2 * 16 - 2)));
  EXPECT_FALSE(IsPrefix(g, too_deep.substr(0, too_deep.size() - 2 * 16 - 1)));

  // Any JSON: nesting beyond kMaxNesting is refused at the bracket that would exceed it.
  auto any = Must(json::object());
  EXPECT_TRUE(Matches(any, std::string(kMaxNesting, '[') + std::string(kMaxNesting, ']')));
  EXPECT_FALSE(IsPrefix(any, std::string(kMaxNesting + 1, '[')));
}

TEST(GrammarMatcher, UnsatisfiableRecursionIsReported) {
  const json endless = {
      {"$defs",
       {{"n",
         {{"type", "object"}, {"properties", {{"next", {{"$ref", "#/$defs/n"}}}}}, {"required", {"next"}}}}}},
      {"$ref", "#/$defs/n"}};
  GrammarBuilder builder;
  auto value = builder.JsonValue(endless, "schema");
  ASSERT_TRUE(value.ok());
  builder.UpdateNeeds();
  EXPECT_FALSE(builder.Satisfiable(*value));
}

std::string ErrorOf(const json& schema) {
  Compiled c = Compile(schema);
  EXPECT_FALSE(c.status.ok()) << schema.dump();
  EXPECT_EQ(c.status.code(), StatusCode::kInvalidArgument);
  return c.status.message();
}

TEST(GrammarMatcher, InvalidSchemasNameThePointer) {
  EXPECT_EQ(ErrorOf({{"properties", {{"a", {{"type", "integer"}, {"minimum", 5}, {"maximum", 1}}}}}}),
            "schema: minimum: above maximum (5 > 1), so no number satisfies both at #/properties/a");
  EXPECT_EQ(ErrorOf({{"type", "strng"}}), "schema: unknown type \"strng\" at #/type");
  EXPECT_EQ(ErrorOf({{"$ref", "#/$defs/missing"}}),
            "schema: $ref '#/$defs/missing' does not resolve at #/$ref");
  EXPECT_EQ(
      ErrorOf({{"$ref", "other.json#/a"}}).find("only references into this schema") != std::string::npos,
      true);
  EXPECT_EQ(ErrorOf({{"items", json::array({json{{"type", "string"}}, json{{"type", "number"}}})},
                     {"prefixItems", json::array()},
                     {"type", "array"}}),
            "schema: items as an array beside prefixItems is ambiguous (use items as a schema) at #/items");
  EXPECT_EQ(ErrorOf({{"type", "object"}, {"anyOf", {{{"type", "null"}}}}}),
            "schema: 'type' beside 'anyOf' is not supported (move it into the subschemas) at #");
  EXPECT_EQ(ErrorOf({{"properties", {{"a/b~", {{"contains", {{"type", "null"}}}}}}}}),
            "schema: keyword 'contains' is not supported in constrained output at #/properties/a~1b~0");
  // A `not` subschema is held to the same keywords (the end check reads it with their meaning).
  EXPECT_EQ(ErrorOf({{"properties", {{"a", {{"not", {{"if", {{"type", "null"}}}}}}}}}}),
            "schema: keyword 'if' is not supported in constrained output at #/properties/a/not");
  EXPECT_EQ(ErrorOf({{"properties", {{"a/b~", {{"pattern", "x(?=y)"}}}}}}),
            "schema: pattern at #/properties/a~1b~0/pattern: regex /x(?=y)/: lookahead '(?=' / '(?!' (not "
            "supported) at offset 2");
  EXPECT_EQ(ErrorOf({{"allOf", {{{"type", "null"}}, {{"type", "null"}}}}}),
            "schema: allOf is supported only with exactly one subschema at #/allOf");
  EXPECT_EQ(ErrorOf({{"type", "array"}, {"minItems", -1}}),
            "schema: must be a non-negative integer at #/minItems");
  EXPECT_EQ(ErrorOf(json(3)), "schema: a schema must be an object or a boolean at #");
  EXPECT_EQ(ErrorOf({{"enum", json::array()}}), "schema: must be a non-empty array at #/enum");
  json deep = {{"type", "string"}};
  for (int i = 0; i <= kMaxSchemaNesting; ++i) deep = {{"type", "array"}, {"items", deep}};
  EXPECT_NE(ErrorOf(deep).find("schema nested deeper than 32 levels at #/items/items"), std::string::npos);
  // Neutral values of otherwise unsupported keywords are fine, and annotations are ignored.
  EXPECT_TRUE(
      Compile({{"type", "string"}, {"minLength", 0}, {"format", "date"}, {"description", "d"}}).status.ok());
}

TEST(GrammarMatcher, StringKeywordsPatternFormatLength) {
  const auto grammar = [](const json& schema) {
    Compiled c = Compile(schema);
    EXPECT_TRUE(c.status.ok()) << c.status.ToString();
    return c.grammar;
  };
  const auto anchored = grammar({{"type", "string"}, {"pattern", "^[a-c]+\\d$"}});
  EXPECT_TRUE(Matches(anchored, "\"ab1\""));
  EXPECT_FALSE(Matches(anchored, "\"ab\""));
  EXPECT_FALSE(Matches(anchored, "\"xab1\""));
  EXPECT_FALSE(Matches(anchored, "\"\\u0061b1\""));  // content is written without escapes
  const auto contains = grammar({{"type", "string"}, {"pattern", "ab"}});
  EXPECT_TRUE(Matches(contains, "\"xaby\""));
  EXPECT_FALSE(Matches(contains, "\"xy\""));
  const auto length = grammar({{"type", "string"}, {"minLength", 2}, {"maxLength", 3}});
  EXPECT_TRUE(Matches(length, "\"ab\""));
  EXPECT_TRUE(Matches(length, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""));  // three code points, six bytes
  EXPECT_FALSE(Matches(length, "\"a\""));
  EXPECT_FALSE(Matches(length, "\"abcd\""));
  const auto date = grammar({{"type", "string"}, {"format", "date"}});
  EXPECT_TRUE(Matches(date, "\"2024-02-28\""));
  EXPECT_FALSE(Matches(date, "\"2024-13-01\""));
  const auto marker = grammar({{"type", "string"}, {"pattern", "^<\\|open\\|>$"}});
  EXPECT_FALSE(IsPrefix(marker, "\"<|open|"));  // the marker filter is part of the automaton
  // An unknown format stays an annotation.
  EXPECT_TRUE(Matches(grammar({{"type", "string"}, {"format", "color"}}), "\"any\""));
}

TEST(GrammarMarkerFilter, RejectsExactlyTheMarkerNames) {
  const auto run = [](std::string_view text) {
    uint8_t state = kFilterStart;
    for (char c : text) {
      state = FilterNext(state, static_cast<uint8_t>(c));
      if (state == kFilterReject) return false;
    }
    return true;
  };
  EXPECT_TRUE(run("<|ope <|opem|> <| sep|> [EOS [eos]"));
  EXPECT_FALSE(run("xx<|<|sep|>"));
  EXPECT_FALSE(run("[[EOS]"));
  EXPECT_FALSE(run("<|end_of_msg|>"));
  EXPECT_TRUE(run("<|end_of_msg|"));
}

}  // namespace
}  // namespace k3::chat::grammar
