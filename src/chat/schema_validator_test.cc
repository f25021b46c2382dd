// The end check's schema validator (schema_validator.h) keyword by keyword, its agreement with valijson
// on a table of draft-7 schemas and values, and OutputSchemaCheck (output_schema_check.h): when it is
// made, the messages it gives (the stop_reason of finish_reason "schema_violation"), and that a value
// that holds (or is not JSON) gives none.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "src/chat/output_schema_check.h"
#include "src/chat/schema_validator.h"

namespace k3::chat {
namespace {

using nlohmann::json;

bool ValijsonAccepts(const json& schema, const json& value) {
  valijson::Schema compiled;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema);
  parser.populateSchema(schema_adapter, compiled);
  valijson::Validator validator;
  valijson::adapters::NlohmannJsonAdapter value_adapter(value);
  return validator.validate(compiled, value_adapter, nullptr);
}

// The message of the first violation, or "" when the value holds.
std::string Violation(const json& schema, const json& value) {
  auto found = FindSchemaViolation(schema, value);
  return found ? found->Message() : "";
}

TEST(SchemaValidator, UniqueItemsNamesThePathAndTheItems) {
  const json schema = json::parse(R"({"type": "object", "properties": {"tags": {"type": "array",
      "items": {"type": "string"}, "uniqueItems": true}}})");
  EXPECT_EQ(Violation(schema, json::parse(R"({"tags": ["a", "b", "a"]})")),
            "uniqueItems: /tags items 0 and 2 are equal");
  EXPECT_EQ(Violation(schema, json::parse(R"({"tags": ["a", "b", "c"]})")), "");
  // Numbers compare by value, objects whatever their member order.
  const json unique = {{"uniqueItems", true}};
  EXPECT_EQ(Violation(unique, json::parse("[1, 1.0]")), "uniqueItems: / items 0 and 1 are equal");
  EXPECT_EQ(Violation(unique, json::parse(R"([{"a": 1, "b": 2}, {"b": 2, "a": 1}])")),
            "uniqueItems: / items 0 and 1 are equal");
  EXPECT_EQ(Violation(unique, json::parse(R"([[1, 2], [2, 1], "1", 1])")), "");
  EXPECT_EQ(Violation({{"uniqueItems", false}}, json::parse("[1, 1]")), "");
}

TEST(SchemaValidator, NotNamesTheSubschema) {
  const json schema =
      json::parse(R"({"properties": {"name": {"type": "string", "not": {"pattern": "^admin"}}}})");
  EXPECT_EQ(Violation(schema, json::parse(R"({"name": "administrator"})")),
            "not: /name matches the schema it must not match (#/properties/name/not)");
  EXPECT_EQ(Violation(schema, json::parse(R"({"name": "root"})")), "");
  // A not of a not; a not over a $ref; not false allows everything, not true nothing.
  EXPECT_EQ(Violation({{"not", {{"not", {{"type", "string"}}}}}}, "x"), "");
  EXPECT_EQ(Violation({{"not", {{"not", {{"type", "string"}}}}}}, 1),
            "not: / matches the schema it must not match (#/not)");
  const json ref =
      json::parse(R"({"$defs": {"Zero": {"const": 0}}, "items": {"not": {"$ref": "#/$defs/Zero"}}})");
  EXPECT_EQ(Violation(ref, json::parse("[1, 0]")),
            "not: /1 matches the schema it must not match (#/items/not)");
  EXPECT_EQ(Violation({{"not", false}}, 1), "");
  EXPECT_EQ(Violation({{"not", true}}, 1), "not: / matches the schema it must not match (#/not)");
}

TEST(SchemaValidator, EachKeywordOnItsOwn) {
  struct Case {
    json schema;
    json value;
    std::string keyword;  // "" when the value holds
  };
  const std::vector<Case> cases = {
      {{{"type", "integer"}}, 2.0, ""},
      {{{"type", "integer"}}, 2.5, "type"},
      {{{"type", {"string", "null"}}}, nullptr, ""},
      {{{"type", {"string", "null"}}}, 1, "type"},
      {{{"enum", {1, "a"}}}, 1.0, ""},
      {{{"enum", {1, "a"}}}, "b", "enum"},
      {{{"const", json::object()}}, json::object(), ""},
      {{{"const", 3}}, 4, "const"},
      {{{"minLength", 2}}, "\u00e9\u00e9", ""},
      {{{"minLength", 3}}, "\u00e9\u00e9", "minLength"},
      {{{"maxLength", 1}}, "ab", "maxLength"},
      {{{"pattern", "b+"}}, "abbc", ""},
      {{{"pattern", "^b+$"}}, "abbc", "pattern"},
      {{{"format", "date"}}, "2026-12-04", ""},
      {{{"format", "date"}}, "yesterday", "format"},
      {{{"format", "color"}}, "anything", ""},
      {{{"minimum", 1}}, 1, ""},
      {{{"minimum", 1}}, 0.5, "minimum"},
      {{{"maximum", 1}}, 1.5, "maximum"},
      {{{"exclusiveMinimum", 1}}, 1, "exclusiveMinimum"},
      {{{"exclusiveMaximum", 1}}, 0.99, ""},
      {{{"minimum", 1}, {"exclusiveMinimum", true}}, 1, "exclusiveMinimum"},
      {{{"multipleOf", 0.1}}, 0.3, ""},
      {{{"multipleOf", 3}}, 10, "multipleOf"},
      {{{"multipleOf", 0.25}}, 0.3, "multipleOf"},
      {{{"minItems", 2}}, json::array({1}), "minItems"},
      {{{"maxItems", 1}}, {1, 2}, "maxItems"},
      {{{"items", {{"type", "integer"}}}}, {1, "x"}, "type"},
      {{{"items", {{{"type", "integer"}}}}, {"additionalItems", false}}, {1, 2}, "false"},
      {{{"prefixItems", {{{"type", "integer"}}}}, {"items", {{"type", "string"}}}}, {1, "x"}, ""},
      {{{"prefixItems", {{{"type", "integer"}}}}, {"items", {{"type", "string"}}}}, {1, 2}, "type"},
      {{{"required", {"a"}}}, json::object(), "required"},
      {{{"properties", {{"a", {{"type", "null"}}}}}, {"additionalProperties", false}},
       {{"b", 1}},
       "additionalProperties"},
      {{{"additionalProperties", {{"type", "integer"}}}}, {{"b", "x"}}, "type"},
      {{{"patternProperties", {{"^n_", {{"type", "integer"}}}}}, {"additionalProperties", false}},
       {{"n_1", 1}},
       ""},
      {{{"patternProperties", {{"^n_", {{"type", "integer"}}}}}}, {{"n_1", "x"}}, "type"},
      {{{"minProperties", 1}}, json::object(), "minProperties"},
      {{{"maxProperties", 1}}, {{"a", 1}, {"b", 2}}, "maxProperties"},
      {{{"anyOf", {{{"type", "null"}}, {{"minimum", 3}}}}}, 4, ""},
      {{{"anyOf", {{{"type", "null"}}, {{"minimum", 3}}}}}, 2, "anyOf"},
      {{{"oneOf", {{{"type", "null"}}, {{"minimum", 3}}}}}, 2, "oneOf"},
      {{{"allOf", {{{"minimum", 1}}, {{"maximum", 2}}}}}, 3, "maximum"},
      {false, 1, "false"},
      {true, 1, ""},
      {{{"$ref", "#/nowhere"}}, 1, ""},
  };
  for (const Case& c : cases) {
    auto found = FindSchemaViolation(c.schema, c.value);
    EXPECT_EQ(found ? found->keyword : "", c.keyword) << c.schema.dump() << " vs " << c.value.dump();
  }
}

// The validator and valijson agree on valid / invalid for draft-7 schemas with not and uniqueItems.
TEST(SchemaValidator, AgreesWithValijson) {
  const std::vector<json> schemas = {
      json::parse(R"({"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 3})"),
      json::parse(R"({"type": "object", "properties": {"a": {"type": "integer", "not": {"multipleOf": 2}},
          "b": {"not": {"type": ["string", "null"]}}}, "required": ["a"]})"),
      json::parse(R"({"not": {"anyOf": [{"type": "boolean"}, {"type": "array", "maxItems": 1}]}})"),
      json::parse(R"({"definitions": {"P": {"type": "object", "properties": {"x": {"type": "number",
          "minimum": 0}}, "required": ["x"]}}, "type": "array", "items": {"$ref": "#/definitions/P"},
          "uniqueItems": true})"),
      json::parse(R"({"type": "string", "not": {"enum": ["a", "b"]}, "maxLength": 3})"),
      json::parse(R"({"patternProperties": {"^k": {"not": {"const": 0}}}, "additionalProperties": false})"),
  };
  const std::vector<json> values = {
      json::parse(R"(["a", "b"])"),
      json::parse(R"(["a", "a"])"),
      json::parse(R"(["a", "b", "c", "d"])"),
      json::parse(R"({"a": 3})"),
      json::parse(R"({"a": 4})"),
      json::parse(R"({"a": 3, "b": null})"),
      json::parse(R"({"a": 3, "b": [1]})"),
      json::parse(R"({"k1": 1, "k2": 0})"),
      json::parse(R"({"k1": 1, "z": 1})"),
      json::parse(R"({})"),
      json::parse(R"([{"x": 1}, {"x": 1}])"),
      json::parse(R"([{"x": 1}, {"x": 2}])"),
      json::parse(R"([{"x": -1}])"),
      json::parse(R"([true])"),
      json::parse(R"([])"),
      json(true),
      json("a"),
      json("abc"),
      json("abcd"),
      json(7),
  };
  int compared = 0;
  for (const json& schema : schemas) {
    for (const json& value : values) {
      EXPECT_EQ(!FindSchemaViolation(schema, value).has_value(), ValijsonAccepts(schema, value))
          << schema.dump() << " vs " << value.dump();
      ++compared;
    }
  }
  EXPECT_EQ(compared, 120);
}

TEST(OutputSchemaCheck, MadeOnlyForNotAndUniqueItems) {
  EXPECT_EQ(OutputSchemaCheck::ForJson({{"type", "array"}, {"uniqueItems", false}}), nullptr);
  EXPECT_EQ(OutputSchemaCheck::ForJson({{"type", "object"}, {"properties", {{"a", {{"minimum", 1}}}}}}),
            nullptr);
  EXPECT_NE(OutputSchemaCheck::ForJson({{"items", {{"uniqueItems", true}}}}), nullptr);
  EXPECT_NE(OutputSchemaCheck::ForJson({{"$defs", {{"X", {{"not", {{"const", 1}}}}}}}}), nullptr);
  const json tools = json::parse(R"([
      {"type": "function", "function": {"name": "plain", "parameters": {"type": "object"}}},
      {"type": "function", "function": {"name": "tag", "parameters": {"type": "object",
          "properties": {"tags": {"type": "array", "uniqueItems": true}}}}}])");
  EXPECT_EQ(OutputSchemaCheck::ForToolCalls(tools, "plain"), nullptr);
  EXPECT_NE(OutputSchemaCheck::ForToolCalls(tools, "tag"), nullptr);
  EXPECT_NE(OutputSchemaCheck::ForToolCalls(tools, ""), nullptr);
  EXPECT_EQ(OutputSchemaCheck::ForToolCalls(json::object(), ""), nullptr);
}

TEST(OutputSchemaCheck, JsonReplyAndToolCalls) {
  auto check = OutputSchemaCheck::ForJson(json::parse(R"({"type": "object", "properties": {
      "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
      "name": {"type": "string", "not": {"const": ""}}}})"));
  ASSERT_NE(check, nullptr);
  EXPECT_EQ(check->CheckJson(R"({"tags":["x","y"],"name":"n"})"), std::nullopt);
  EXPECT_EQ(check->CheckJson(R"({"tags":["x","y","x"],"name":"n"})"),
            std::optional<std::string>("uniqueItems: /tags items 0 and 2 are equal"));
  EXPECT_EQ(
      check->CheckJson(R"({"name":""})"),
      std::optional<std::string>("not: /name matches the schema it must not match (#/properties/name/not)"));
  EXPECT_EQ(check->CheckJson(R"({"tags":["x","x")"), std::nullopt);  // cut by a stop string: not JSON

  const json tools = json::parse(R"([{"type": "function", "function": {"name": "tag", "parameters": {
      "type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"},
      "uniqueItems": true}}}}}, {"type": "function", "function": {"name": "other"}}])");
  auto calls = OutputSchemaCheck::ForToolCalls(tools, "");
  ASSERT_NE(calls, nullptr);
  EXPECT_EQ(calls->CheckToolCall("tag", R"({"ids":[1,2]})", 0), std::nullopt);
  EXPECT_EQ(calls->CheckToolCall("tag", R"({"ids":[2,2]})", 1),
            std::optional<std::string>(
                "uniqueItems: /ids items 0 and 1 are equal (arguments of tool call 1, tag)"));
  EXPECT_EQ(calls->CheckToolCall("other", R"({"ids":[2,2]})", 0), std::nullopt);
}

}  // namespace
}  // namespace k3::chat
