// Tests for the JSON writers and attribute escaping.
#include "src/chat/json_text.h"

#include <gtest/gtest.h>

namespace k3::chat {
namespace {

TEST(JsonTextTest, PythonStyleKeepsOrderAndSpaces) {
  const auto value = nlohmann::ordered_json::parse(R"({"b": [1, 2.5, true, null], "a": {"x": "é\n"}})");
  EXPECT_EQ(DumpPythonStyle(value), "{\"b\": [1, 2.5, true, null], \"a\": {\"x\": \"é\\n\"}}");
  EXPECT_EQ(DumpPythonStyle(nlohmann::ordered_json::array()), "[]");
  EXPECT_EQ(DumpPythonStyle(nlohmann::ordered_json::parse("\"q\\\"\"")), "\"q\\\"\"");
}

TEST(JsonTextTest, CompactSortedSortsEveryLevel) {
  const auto value = nlohmann::json::parse(R"({"z": 1, "a": {"y": [{"d": 1, "c": "中"}], "b": 2}})");
  EXPECT_EQ(DumpCompactSorted(value), R"({"a":{"b":2,"y":[{"c":"中","d":1}]},"z":1})");
}

TEST(JsonTextTest, AttributeEscapingRoundTrips) {
  EXPECT_EQ(EscapeAttribute(R"(a&"b&quot;)"), "a&amp;&quot;b&amp;quot;");
  EXPECT_EQ(UnescapeAttribute(EscapeAttribute(R"(a&"b&quot;)")), R"(a&"b&quot;)");
}

}  // namespace
}  // namespace k3::chat
