// The token budget of constrained outputs (ConstraintOptions::max_tokens, grammar_distance.h): with
// random weights (uniform sampling over the mask) or a model that never wants to stop (always the
// longest-running choice), a forced tool call or JSON value completes within max_tokens, end id included,
// and the reasoning takes at most half of it; a budget below the shortest output changes nothing.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/chat/constraint_testing.h"
#include "src/chat/json_schema_grammar.h"
#include "src/chat/output_parser.h"

namespace k3::chat {
namespace {

using nlohmann::json;
using testing::TinyK3;
using tokenizer::Tokenizer;

ConstraintOptions Options(bool reasoning, int64_t max_tokens) {
  ConstraintOptions options;
  options.end_ids = {static_cast<int32_t>(*TinyK3().SpecialId("<|end_of_msg|>"))};
  options.allow_reasoning = reasoning;
  options.max_tokens = max_tokens;
  return options;
}

std::vector<int32_t> Allowed(TokenConstraint& constraint) {
  return testing::Allowed(constraint, TinyK3().vocab_size());
}

enum class Policy { kUniform, kNeverStop };

// Samples until the end id (or `cap` tokens). kNeverStop prefers ordinary tokens without '"', ']', '}'
// or ',' (text goes on, strings and containers stay open), like a model that never closes anything.
struct BudgetWalk {
  std::vector<tokenizer::TokenId> ids;
  std::string text;
  bool ended = false;
  size_t reasoning_tokens = 0;  // tokens before the first special
};
BudgetWalk RandomWalk(TokenConstraint& constraint, Policy policy, std::mt19937_64& rng, size_t cap) {
  const Tokenizer& tok = TinyK3();
  BudgetWalk walk;
  bool in_reasoning = true;
  while (walk.ids.size() < cap) {
    const std::vector<int32_t> allowed = Allowed(constraint);
    if (allowed.empty()) {
      ADD_FAILURE() << "empty mask after: " << *tok.Decode(walk.ids);
      break;
    }
    std::vector<int32_t> pool;
    if (policy == Policy::kNeverStop) {
      for (int32_t id : allowed) {
        const auto token = static_cast<tokenizer::TokenId>(id);
        if (!tok.IsSpecial(token) && tok.TokenBytes(token)->find_first_of("\"]},") == std::string::npos) {
          pool.push_back(id);
        }
      }
    }
    if (pool.empty()) pool = allowed;
    const int32_t id = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
    const bool was_complete = constraint.IsComplete();
    EXPECT_TRUE(constraint.Accept(id)) << id;
    walk.ids.push_back(static_cast<tokenizer::TokenId>(id));
    if (tok.IsSpecial(static_cast<tokenizer::TokenId>(id))) in_reasoning = false;
    if (in_reasoning) ++walk.reasoning_tokens;
    if (was_complete) {
      walk.ended = true;
      break;
    }
  }
  walk.text = *tok.Decode(walk.ids);
  return walk;
}

const json kBudgetTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                   "days": {"type": "integer"}},
    "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object",
    "properties": {"numbers": {"type": "array", "items": {"type": "number"}},
                   "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                   "extra": {"type": "object"}},
    "required": ["numbers", "extra"], "additionalProperties": false}}}
])");

// Every walk of every policy ends within max_tokens with one or more tool calls the parser reads.
void ToolCallsFit(const std::string& function, bool parallel, bool reasoning, int64_t max_tokens,
                  uint64_t seed) {
  auto made =
      MakeToolCallConstraint(TinyK3(), kBudgetTools, function, parallel, Options(reasoning, max_tokens));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::mt19937_64 rng(seed);
  for (Policy policy : {Policy::kUniform, Policy::kNeverStop}) {
    for (int w = 0; w < 12; ++w) {
      auto constraint = (*made)->Clone();
      const BudgetWalk walk = RandomWalk(*constraint, policy, rng, 20000);
      ASSERT_TRUE(walk.ended) << walk.text;
      EXPECT_LE(static_cast<int64_t>(walk.ids.size()), max_tokens) << walk.text;
      if (reasoning) {
        // Half the budget, and at most 3 more tokens to finish a multi-byte character.
        EXPECT_LE(static_cast<int64_t>(walk.reasoning_tokens), max_tokens / 2 + 3) << walk.text;
      }
      const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{reasoning, true});
      ASSERT_GE(parsed.tool_calls.size(), 1u) << walk.text;
      for (const ParsedToolCall& call : parsed.tool_calls) {
        EXPECT_FALSE(call.used_fallback) << walk.text;
        if (!function.empty()) {
          EXPECT_EQ(call.name, function);
        }
        const json arguments = json::parse(call.arguments, nullptr, false);
        ASSERT_TRUE(arguments.is_object()) << call.arguments;
        if (call.name == "get_weather") {
          EXPECT_TRUE(arguments.contains("city") && arguments["city"].is_string()) << call.arguments;
          EXPECT_TRUE(arguments.contains("unit")) << call.arguments;
        } else {
          EXPECT_TRUE(arguments.contains("numbers") && arguments["numbers"].is_array()) << call.arguments;
          EXPECT_TRUE(arguments.contains("extra") && arguments["extra"].is_object()) << call.arguments;
        }
      }
    }
  }
}

TEST(ConstraintBudget, ForcedToolCallsFitWithReasoning) {
  ToolCallsFit("", false, true, 256, 1);
  ToolCallsFit("get_weather", false, true, 160, 2);
  ToolCallsFit("add", true, true, 300, 3);
}

TEST(ConstraintBudget, ForcedToolCallsFitWithoutReasoning) {
  ToolCallsFit("", false, false, 120, 4);
  ToolCallsFit("", true, false, 400, 5);
}

TEST(ConstraintBudget, JsonValuesFit) {
  const json recursive = json::parse(R"({
    "$defs": {"node": {"type": "object",
                       "properties": {"value": {"type": "string"},
                                      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                       "required": ["value", "children"], "additionalProperties": false}},
    "$ref": "#/$defs/node"})");
  const json profile = json::parse(R"({"type": "object", "properties": {
    "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    "kind": {"enum": ["a", "b"]}}, "required": ["name", "tags", "kind"]})");
  for (const json& schema : {recursive, profile, json()}) {
    for (bool reasoning : {false, true}) {
      auto made = MakeJsonConstraint(TinyK3(), schema, Options(reasoning, 150));
      ASSERT_TRUE(made.ok()) << made.status().ToString();
      std::mt19937_64 rng(reasoning ? 7 : 8);
      for (Policy policy : {Policy::kUniform, Policy::kNeverStop}) {
        for (int w = 0; w < 10; ++w) {
          auto constraint = (*made)->Clone();
          const BudgetWalk walk = RandomWalk(*constraint, policy, rng, 20000);
          ASSERT_TRUE(walk.ended) << walk.text;
          EXPECT_LE(walk.ids.size(), 150u) << walk.text;
          const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{reasoning, false});
          const json value = json::parse(parsed.content, nullptr, false);
          ASSERT_TRUE(value.is_object()) << walk.text;
        }
      }
    }
  }
}

// A budget of the shortest output's length (as BPE encodes it) still fits: every walk ends in time.
TEST(ConstraintBudget, TheShortestOutputFits) {
  const std::string closing = "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";
  const auto budget =
      static_cast<int64_t>(TinyK3().Encode("true" + closing, tokenizer::SpecialTokens::kAllowed).size());
  auto made = MakeJsonConstraint(TinyK3(), json{{"type", "boolean"}}, Options(false, budget));
  ASSERT_TRUE(made.ok());
  std::mt19937_64 rng(9);
  for (Policy policy : {Policy::kUniform, Policy::kNeverStop}) {
    for (int w = 0; w < 20; ++w) {
      auto constraint = (*made)->Clone();
      const BudgetWalk walk = RandomWalk(*constraint, policy, rng, 1000);
      ASSERT_TRUE(walk.ended);
      EXPECT_LE(static_cast<int64_t>(walk.ids.size()), budget) << walk.text;
      EXPECT_TRUE(walk.text == "true" + closing || walk.text == "false" + closing) << walk.text;
    }
  }
}

// Reasoning stops at half the budget: from then on only the think close is allowed.
TEST(ConstraintBudget, ReasoningEndsAtHalfTheBudget) {
  auto made = MakeToolCallConstraint(TinyK3(), kBudgetTools, "get_weather", false, Options(true, 400));
  ASSERT_TRUE(made.ok());
  TokenConstraint& c = **made;
  const auto a = static_cast<int32_t>(TinyK3().Encode("a", tokenizer::SpecialTokens::kDisallowed)[0]);
  for (int i = 0; i < 200; ++i) {
    EXPECT_GT(Allowed(c).size(), 100u) << i;
    ASSERT_TRUE(c.Accept(a)) << i;
  }
  EXPECT_EQ(Allowed(c), std::vector<int32_t>{static_cast<int32_t>(*TinyK3().SpecialId("<|close|>"))});
}

// A budget below the shortest output is dropped: the masks are the grammar's alone (the engine then
// stops at max_tokens with finish_reason "length").
TEST(ConstraintBudget, ABudgetTooSmallForAnyOutputIsIgnored) {
  auto unbounded = MakeToolCallConstraint(TinyK3(), kBudgetTools, "", false, Options(true, 0));
  auto tiny = MakeToolCallConstraint(TinyK3(), kBudgetTools, "", false, Options(true, 10));
  ASSERT_TRUE(unbounded.ok() && tiny.ok());
  const auto a = static_cast<int32_t>(TinyK3().Encode("a", tokenizer::SpecialTokens::kDisallowed)[0]);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Allowed(**unbounded), Allowed(**tiny)) << i;
    ASSERT_TRUE((*unbounded)->Accept(a) && (*tiny)->Accept(a));
  }
}

}  // namespace
}  // namespace k3::chat
