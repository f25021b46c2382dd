// Body parsing and field reading: depth limit, invalid JSON / UTF-8 / numbers, typed readers.
#include "src/api/json_fields.h"

#include <string>

#include <gtest/gtest.h>

namespace k3::api {
namespace {

TEST(JsonFieldsTest, NestingDepthSkipsStrings) {
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": "[[[{{{"}]})", 100), 3);
  EXPECT_EQ(JsonNestingDepth(R"(["\"[", "\\", []])", 100), 2);
  EXPECT_EQ(JsonNestingDepth("", 100), 0);
  EXPECT_EQ(JsonNestingDepth(std::string(1000000, '['), 10), 11);  // stops early
}

TEST(JsonFieldsTest, ParseRejectsDeepNestingBadJsonAndNonObjects) {
  ApiError error;
  EXPECT_FALSE(ParseRequestBody(std::string(100000, '[') + std::string(100000, ']'), &error));
  EXPECT_NE(error.message.find("deeper than"), std::string::npos);
  EXPECT_FALSE(ParseRequestBody(R"({"model": )", &error));
  EXPECT_NE(error.message.find("not valid JSON"), std::string::npos);
  EXPECT_FALSE(ParseRequestBody("{\"a\": \"\xff\xfe\"}", &error));
  EXPECT_NE(error.message.find("not valid JSON"), std::string::npos);
  EXPECT_FALSE(ParseRequestBody(R"({"a": 1e99999})", &error));
  EXPECT_FALSE(ParseRequestBody(R"({"a": "\ud800"})", &error));
  EXPECT_FALSE(ParseRequestBody("[1, 2]", &error));
  EXPECT_NE(error.message.find("must be a JSON object, got array"), std::string::npos);
  EXPECT_EQ(error.http_status, 400);
  EXPECT_TRUE(ParseRequestBody(R"({"a": [[[1]]]})", &error));
}

TEST(JsonFieldsTest, TypedReadersNameTheFieldAndKeepTheFirstError) {
  const auto object = nlohmann::json::parse(
      R"({"b": true, "s": "x", "f": 0.5, "i": 3, "i2": 2.0, "big": 1e30, "neg": -1, "nul": null,
          "o": {"inner": "y"}, "arr": [1]})");
  FieldReader fields(object, "");
  EXPECT_EQ(fields.Bool("b"), true);
  EXPECT_EQ(fields.String("s"), "x");
  EXPECT_EQ(fields.Number("f", 0, 1), 0.5);
  EXPECT_EQ(fields.Int("i", 0, 10), 3);
  EXPECT_EQ(fields.Int("i2", 0, 10), 2);
  EXPECT_EQ(fields.Bool("nul"), std::nullopt);
  EXPECT_EQ(fields.Bool("absent"), std::nullopt);
  EXPECT_NE(fields.Object("o"), nullptr);
  EXPECT_NE(fields.Array("arr"), nullptr);
  EXPECT_TRUE(fields.ok());

  FieldReader nested = fields.Nested((*fields.Object("o")), "o");
  EXPECT_EQ(nested.Int("inner", 0, 1), std::nullopt);
  ASSERT_FALSE(fields.ok());  // nested errors reach the outer reader
  EXPECT_EQ(fields.error().param, "o.inner");
  EXPECT_EQ(fields.error().message, "o.inner: expected an integer, got string");
  fields.Fail("later", "ignored");
  EXPECT_EQ(fields.error().param, "o.inner");
}

TEST(JsonFieldsTest, RangeErrors) {
  const auto object =
      nlohmann::json::parse(R"({"big": 1e30, "neg": -1, "frac": 1.5, "u": 18446744073709551615})");
  for (const char* key : {"big", "neg", "frac", "u"}) {
    FieldReader fields(object, "");
    EXPECT_EQ(fields.Int(key, 0, 100), std::nullopt) << key;
    ASSERT_FALSE(fields.ok());
    EXPECT_EQ(fields.error().param, key);
    EXPECT_NE(fields.error().message.find("must be an integer in [0, 100]"), std::string::npos);
  }
  FieldReader fields(object, "top");
  EXPECT_EQ(fields.Number("neg", 0, 1, /*min_exclusive=*/true), std::nullopt);
  EXPECT_EQ(fields.error().message, "top.neg: must be a number in (0, 1], got -1");
}

TEST(JsonFieldsTest, IntegerValueBounds) {
  EXPECT_EQ(IntegerValue(nlohmann::json(9223372036854775807LL), 0, INT64_MAX), INT64_MAX);
  EXPECT_EQ(IntegerValue(nlohmann::json(9.3e18), INT64_MIN, INT64_MAX), std::nullopt);
  EXPECT_EQ(IntegerValue(nlohmann::json(-9.3e18), INT64_MIN, INT64_MAX), std::nullopt);
  EXPECT_EQ(IntegerValue(nlohmann::json(true), 0, 1), std::nullopt);
  EXPECT_EQ(IntegerValue(nlohmann::json(18446744073709551615ULL), 0, INT64_MAX), std::nullopt);
}

}  // namespace
}  // namespace k3::api
