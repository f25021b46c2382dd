// Token-level tests of MakeJsonConstraint / MakeToolCallConstraint on the tiny-k3 vocabulary: random
// walks through the allowed masks always end in output that chat::ParseOutput turns into JSON (or tool
// calls) valid against the schema (checked with valijson); masks agree with Accept; special tokens only
// where the grammar places them; errors; FillAllowed timings on tiny-k3 and on a 163,584-rank vocabulary.
#include "src/chat/json_schema_grammar.h"
#include "src/chat/output_schema_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <unordered_set>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "src/chat/constraint_testing.h"
#include "src/chat/output_parser.h"
#include "src/chat/regex_constraint.h"
#include "src/tokenizer/bpe_trainer.h"

namespace k3::chat {
namespace {

using nlohmann::json;
using testing::Allowed;
using testing::TinyK3;
using tokenizer::Tokenizer;

ConstraintOptions Options(const Tokenizer& tok, bool reasoning) {
  ConstraintOptions options;
  options.end_ids = {static_cast<int32_t>(*tok.SpecialId("<|end_of_msg|>")),
                     static_cast<int32_t>(*tok.SpecialId("[EOS]"))};
  options.allow_reasoning = reasoning;
  return options;
}

std::string Validate(const json& schema, const json& value) {
  valijson::Schema compiled;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema);
  parser.populateSchema(schema_adapter, compiled);
  valijson::Validator validator;
  valijson::adapters::NlohmannJsonAdapter value_adapter(value);
  valijson::ValidationResults results;
  if (validator.validate(compiled, value_adapter, &results)) return "";
  std::string why;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) why += error.description + "; ";
  return why.empty() ? "invalid" : why;
}

// Samples uniformly from the mask; after `budget` steps only among tokens that tend to close things
// (containing '"', ']' or '}', or a special), so walks end. Every token still comes from the mask.
struct Walk {
  std::vector<tokenizer::TokenId> ids;
  std::string text;
  bool ended = false;
};
Walk RandomWalk(TokenConstraint& constraint, const Tokenizer& tok, const ConstraintOptions& options,
                std::mt19937_64& rng, size_t budget, size_t cap = 6000) {
  Walk walk;
  for (size_t step = 0; step < cap; ++step) {
    const std::vector<int32_t> allowed = Allowed(constraint, tok.vocab_size());
    if (allowed.empty()) {
      ADD_FAILURE() << "empty mask after: " << *tok.Decode(walk.ids);
      return walk;
    }
    if (constraint.IsComplete()) {
      EXPECT_EQ(std::set<int32_t>(allowed.begin(), allowed.end()),
                std::set<int32_t>(options.end_ids.begin(), options.end_ids.end()));
    }
    std::vector<int32_t> pool;
    if (step >= budget) {
      for (int32_t id : allowed) {
        const std::string_view bytes = *tok.TokenBytes(static_cast<tokenizer::TokenId>(id));
        if (tok.IsSpecial(static_cast<tokenizer::TokenId>(id)) ||
            bytes.find_first_of("\"]}") != std::string::npos) {
          pool.push_back(id);
        }
      }
    }
    if (pool.empty()) pool = allowed;
    const int32_t id = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
    const bool was_complete = constraint.IsComplete();
    EXPECT_TRUE(constraint.Accept(id)) << id;
    walk.ids.push_back(static_cast<tokenizer::TokenId>(id));
    if (was_complete) {
      walk.ended = true;
      break;
    }
  }
  walk.text = *tok.Decode(walk.ids);
  return walk;
}

void JsonWalks(const json& schema, bool reasoning, int walks, uint64_t seed) {
  const Tokenizer& tok = TinyK3();
  const ConstraintOptions options = Options(tok, reasoning);
  auto made = MakeJsonConstraint(tok, schema, options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::mt19937_64 rng(seed);
  int with_reasoning = 0;
  for (int w = 0; w < walks; ++w) {
    auto constraint = (*made)->Clone();
    Walk walk = RandomWalk(*constraint, tok, options, rng, 24 + w % 40);
    ASSERT_TRUE(walk.ended) << walk.text;
    const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{reasoning, false});
    EXPECT_EQ(parsed.reasoning_ended, reasoning);
    with_reasoning += parsed.reasoning.empty() ? 0 : 1;
    const json value = json::parse(parsed.content, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << "not JSON: " << parsed.content << "\nfrom: " << walk.text;
    if (schema.is_null()) {
      EXPECT_TRUE(value.is_object()) << parsed.content;
    } else {
      EXPECT_EQ(Validate(schema, value), "") << parsed.content;
    }
  }
  if (reasoning) {
    EXPECT_GT(with_reasoning, 0);
  }
}

const json kProfile = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "score": {"type": "number"},
    "active": {"type": "boolean"},
    "nothing": {"type": "null"},
    "color": {"enum": ["red", "green", "blue"]},
    "kind": {"const": "person"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "nick": {"type": ["string", "null"]}
  },
  "required": ["name", "age", "kind"],
  "additionalProperties": false
})");

const json kTree = json::parse(R"({
  "$defs": {"node": {"type": "object",
                     "properties": {"value": {"type": "integer"},
                                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                     "required": ["value"], "additionalProperties": false}},
  "$ref": "#/$defs/node"
})");

const json kShapes = json::parse(R"({
  "anyOf": [
    {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
     "required": ["x", "y"], "additionalProperties": false},
    {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}, "minItems": 1}},
     "required": ["xs"], "additionalProperties": false},
    {"type": "string"}
  ]
})");

const json kOpenMap = json::parse(R"({
  "type": "object",
  "properties": {"id": {"type": "integer"}},
  "additionalProperties": {"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "null"}}]}
})");

TEST(JsonConstraint, RandomWalksValidateEveryKeyword) {
  JsonWalks(kProfile, false, 40, 1);
  JsonWalks(kTree, false, 30, 2);
  JsonWalks(kShapes, false, 30, 3);
  JsonWalks(kOpenMap, false, 30, 4);
  JsonWalks(json::parse(R"({"definitions": {"s": {"type": "string"}}, "type": "array",
                            "items": {"$ref": "#/definitions/s"}, "minItems": 2, "maxItems": 4})"),
            false, 30, 5);
  JsonWalks(json::parse(R"({"type": ["number", "boolean"]})"), false, 20, 6);
  JsonWalks(json::parse(R"({"type": "string"})"), false, 20, 7);
}

// Formats valijson does not check, by independent regexes (looser than the grammar's built-in ones).
bool FormatHolds(const std::string& format, const std::string& text) {
  static const std::map<std::string, std::regex> kFormats = {
      {"email", std::regex(R"(^[^@\s"]+@[^@\s"]+\.[A-Za-z]{2,}$)")},
      {"uuid", std::regex(R"(^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$)")},
      {"ipv4",
       std::regex(
           R"(^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$)")},
      {"ipv6", std::regex(R"(^([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$)")},
      {"uri", std::regex(R"(^[A-Za-z][A-Za-z0-9+.-]*:[^\s"<>\\^`{|}]+$)")},
      {"hostname",
       std::regex(
           R"(^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$)")},
  };
  auto it = kFormats.find(format);
  return it == kFormats.end() || (text.size() <= 253 && std::regex_match(text, it->second));
}

// Checks `format` wherever the schema (properties, items, additionalProperties, anyOf, local $ref) puts
// one on a string of the value; returns the first violation.
std::string CheckFormats(const json& root, const json& schema, const json& value) {
  if (!schema.is_object()) return "";
  if (schema.contains("$ref")) {
    return CheckFormats(root, root.at(json::json_pointer(schema["$ref"].get<std::string>().substr(1))),
                        value);
  }
  if (schema.contains("anyOf")) {  // some branch must hold (valijson checks the rest)
    std::string first;
    for (const json& branch : schema["anyOf"]) {
      const std::string error = CheckFormats(root, branch, value);
      if (error.empty()) return "";
      if (first.empty()) first = error;
    }
    return first;
  }
  if (value.is_string() && schema.contains("format") &&
      !FormatHolds(schema["format"].get<std::string>(), value.get<std::string>())) {
    return "not a " + schema["format"].get<std::string>() + ": " + value.dump();
  }
  if (value.is_array() && schema.contains("items")) {
    for (const json& item : value) {
      if (std::string e = CheckFormats(root, schema["items"], item); !e.empty()) return e;
    }
  }
  if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      const json* sub = nullptr;
      if (schema.contains("properties") && schema["properties"].contains(key)) {
        sub = &schema["properties"][key];
      } else if (schema.contains("additionalProperties")) {
        sub = &schema["additionalProperties"];
      }
      if (sub == nullptr) continue;
      if (std::string e = CheckFormats(root, *sub, member); !e.empty()) return e;
    }
  }
  return "";
}

// The schema corpus of string keywords (pattern, format, minLength, maxLength) in Pydantic-like shapes:
// every schema compiles, and random walks give JSON that valijson accepts and whose formats hold.
TEST(JsonConstraint, StringKeywordCorpusWalksValidate) {
  std::ifstream file(std::string(K3_SOURCE_DIR) + "/tests/data/schemas/string_keywords.json");
  ASSERT_TRUE(file.good());
  const json corpus = json::parse(file);
  ASSERT_GE(corpus.size(), 30u);
  const Tokenizer& tok = TinyK3();
  // A token budget, so walks through unanchored patterns end: the shortest completion (grammar_distance)
  // through each pattern's automaton steers them closed in time.
  ConstraintOptions options = Options(tok, false);
  options.max_tokens = 160;
  std::mt19937_64 rng(1717);
  for (size_t i = 0; i < corpus.size(); ++i) {
    const json& schema = corpus[i];
    auto made = MakeJsonConstraint(tok, schema, options);
    ASSERT_TRUE(made.ok()) << i << ": " << made.status().ToString();
    for (int w = 0; w < 4; ++w) {  // 30 schemas x 4 walks: about 17 s under ASan (Debug)
      auto constraint = (*made)->Clone();
      Walk walk = RandomWalk(*constraint, tok, options, rng, 16 + w * 4);
      ASSERT_TRUE(walk.ended) << i << ": " << walk.text;
      EXPECT_LE(walk.ids.size(), 160u) << i << ": " << walk.text;
      const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{false, false});
      const json value = json::parse(parsed.content, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << i << ": not JSON: " << parsed.content;
      EXPECT_EQ(Validate(schema, value), "") << i << ": " << parsed.content;
      EXPECT_EQ(CheckFormats(schema, schema, value), "") << i << ": " << parsed.content;
    }
  }
}

// The schema with 2020-12 tuples (prefixItems, then items) in the draft-7 form valijson checks (items as
// an array, then additionalItems), everywhere in the document.
json Draft7Tuples(const json& schema) {
  if (schema.is_array()) {
    json out = json::array();
    for (const json& item : schema) out.push_back(Draft7Tuples(item));
    return out;
  }
  if (!schema.is_object()) return schema;
  json out = json::object();
  for (const auto& [key, value] : schema.items()) out[key] = Draft7Tuples(value);
  if (out.contains("prefixItems")) {
    if (out.contains("items")) out["additionalItems"] = out["items"];
    out["items"] = out["prefixItems"];
    out.erase("prefixItems");
  }
  return out;
}

// The corpus of numeric, tuple and object-count keywords (minimum / maximum / exclusive bounds,
// multipleOf, prefixItems, minItems / maxItems, minProperties / maxProperties, patternProperties) in
// Pydantic-like shapes: every schema compiles and random walks give JSON that valijson accepts.
TEST(JsonConstraint, NumericKeywordCorpusWalksValidate) {
  std::ifstream file(std::string(K3_SOURCE_DIR) + "/tests/data/schemas/numeric_keywords.json");
  ASSERT_TRUE(file.good());
  const json corpus = json::parse(file);
  ASSERT_GE(corpus.size(), 12u);
  const Tokenizer& tok = TinyK3();
  ConstraintOptions options = Options(tok, false);
  options.max_tokens = 160;
  std::mt19937_64 rng(4242);
  for (size_t i = 0; i < corpus.size(); ++i) {
    const json& schema = corpus[i];
    auto made = MakeJsonConstraint(tok, schema, options);
    ASSERT_TRUE(made.ok()) << i << ": " << made.status().ToString();
    std::set<std::string> distinct;
    for (int w = 0; w < 6; ++w) {
      auto constraint = (*made)->Clone();
      Walk walk = RandomWalk(*constraint, tok, options, rng, 16 + w * 4);
      ASSERT_TRUE(walk.ended) << i << ": " << walk.text;
      EXPECT_LE(walk.ids.size(), 160u) << i << ": " << walk.text;
      const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{false, false});
      const json value = json::parse(parsed.content, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << i << ": not JSON: " << parsed.content;
      EXPECT_EQ(Validate(Draft7Tuples(schema), value), "") << i << ": " << parsed.content;
      distinct.insert(parsed.content);
    }
    EXPECT_GT(distinct.size(), 1u) << i << ": the walks all wrote " << *distinct.begin();
  }
}

// The corpus of `not` and `uniqueItems` schemas in Pydantic-like shapes (also sent to a real server by
// tests/compat/vllm_parity): every schema compiles, and the value of each random walk either holds
// (valijson) and the end check finds nothing, or breaks the schema and the end check names `not` or
// `uniqueItems` (the grammar enforces every other keyword). Where the grammar enforces the `not` /
// `uniqueItems` itself (a not of types, an enum less a not, unique enum items) no walk breaks it.
TEST(JsonConstraint, NotAndUniqueItemsCorpusEndCheck) {
  std::ifstream file(std::string(K3_SOURCE_DIR) + "/tests/data/schemas/not_unique_keywords.json");
  ASSERT_TRUE(file.good());
  const json corpus = json::parse(file);
  ASSERT_GE(corpus.size(), 12u);
  const std::set<size_t> enforced_by_grammar = {3, 9, 10, 11};
  const Tokenizer& tok = TinyK3();
  ConstraintOptions options = Options(tok, false);
  options.max_tokens = 160;
  std::mt19937_64 rng(1717);
  int held = 0;
  int broken = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const json& schema = corpus[i];
    auto made = MakeJsonConstraint(tok, schema, options);
    ASSERT_TRUE(made.ok()) << i << ": " << made.status().ToString();
    auto check = OutputSchemaCheck::ForJson(schema);
    ASSERT_NE(check, nullptr) << i;
    for (int w = 0; w < 8; ++w) {
      auto constraint = (*made)->Clone();
      Walk walk = RandomWalk(*constraint, tok, options, rng, 8 + w * 4);
      ASSERT_TRUE(walk.ended) << i << ": " << walk.text;
      const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{false, false});
      const json value = json::parse(parsed.content, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << i << ": not JSON: " << parsed.content;
      const std::string why = Validate(schema, value);
      const std::optional<std::string> violation = check->CheckJson(parsed.content);
      EXPECT_EQ(why.empty(), !violation.has_value()) << i << ": " << parsed.content << " valijson: " << why;
      if (violation) {
        ++broken;
        EXPECT_TRUE(violation->rfind("not: ", 0) == 0 || violation->rfind("uniqueItems: ", 0) == 0)
            << i << ": " << *violation;
        EXPECT_EQ(enforced_by_grammar.count(i), 0u) << i << ": " << parsed.content << ": " << *violation;
      } else {
        ++held;
      }
    }
  }
  EXPECT_GT(held, 0);
  EXPECT_GT(broken, 0);  // random walks do write duplicates and excluded values
}

TEST(JsonConstraint, StringKeywordErrorsNameTheKeyword) {
  const Tokenizer& tok = TinyK3();
  const auto error = [&](const json& schema) {
    auto made = MakeJsonConstraint(tok, schema, Options(tok, false));
    return made.ok() ? std::string("(compiled)") : made.status().ToString();
  };
  EXPECT_NE(error({{"type", "string"}, {"pattern", "a(?=b)"}}).find("lookahead"), std::string::npos);
  EXPECT_NE(error({{"properties", {{"p", {{"type", "string"}, {"pattern", "(a)\\1"}}}}}})
                .find("#/properties/p/pattern"),
            std::string::npos);
  EXPECT_NE(error({{"type", "string"}, {"pattern", 3}}).find("pattern: must be a string"), std::string::npos);
  EXPECT_NE(error({{"type", "string"}, {"minLength", -1}}).find("minLength: must be a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error({{"type", "string"}, {"minLength", 5000}}).find("minLength"), std::string::npos);
  // A pattern only escapes could write (a quote) leaves no string; a union still has its other branch.
  EXPECT_EQ(error({{"anyOf", {{{"type", "string"}, {"pattern", "^\"$"}}, {{"type", "null"}}}}}),
            "(compiled)");
}

TEST(JsonConstraint, JsonObjectModeGivesAnyObject) { JsonWalks(json(), false, 40, 8); }

TEST(JsonConstraint, ReasoningComesFirstWhenAllowed) {
  JsonWalks(kProfile, true, 30, 9);
  JsonWalks(json(), true, 20, 10);
}

// Every token of the mask is accepted and every other token refused, along a random walk (free text,
// strings, numbers, markup).
void CheckMasksAgreeWithAccept(TokenConstraint& prototype, uint64_t seed) {
  const Tokenizer& tok = TinyK3();
  std::mt19937_64 rng(seed);
  auto constraint = prototype.Clone();
  for (int step = 0; step < 150 && !constraint->IsComplete(); ++step) {
    const std::vector<int32_t> allowed = Allowed(*constraint, tok.vocab_size());
    const std::unordered_set<int32_t> in_mask(allowed.begin(), allowed.end());
    for (size_t id = 0; id < tok.vocab_size(); ++id) {
      auto probe = constraint->Clone();
      ASSERT_EQ(probe->Accept(static_cast<int32_t>(id)), in_mask.count(static_cast<int32_t>(id)) > 0)
          << id << " after " << step << " steps";
    }
    ASSERT_FALSE(allowed.empty());
    ASSERT_TRUE(
        constraint->Accept(allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)]));
  }
}

TEST(JsonConstraint, MasksAgreeWithAcceptAndSpecialsStayOut) {
  const Tokenizer& tok = TinyK3();
  const ConstraintOptions options = Options(tok, false);
  auto made = MakeJsonConstraint(tok, kProfile, options);
  ASSERT_TRUE(made.ok());
  std::mt19937_64 rng(11);
  auto constraint = (*made)->Clone();
  for (int step = 0; step < 60 && !constraint->IsComplete(); ++step) {
    const std::vector<int32_t> allowed = Allowed(*constraint, tok.vocab_size());
    const std::unordered_set<int32_t> in_mask(allowed.begin(), allowed.end());
    for (size_t id = 0; id < tok.vocab_size(); ++id) {
      auto probe = constraint->Clone();
      EXPECT_EQ(probe->Accept(static_cast<int32_t>(id)), in_mask.count(static_cast<int32_t>(id)) > 0) << id;
    }
    // Inside the JSON value no special token is allowed (the markup after it is checked below).
    for (int32_t id : allowed) EXPECT_FALSE(tok.IsSpecial(static_cast<tokenizer::TokenId>(id))) << id;
    ASSERT_TRUE(
        constraint->Accept(allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)]));
  }
}

TEST(JsonConstraint, ClosingMarkupThenOnlyEndIds) {
  const Tokenizer& tok = TinyK3();
  const ConstraintOptions options = Options(tok, false);
  auto made = MakeJsonConstraint(tok, json{{"type", "boolean"}}, options);
  ASSERT_TRUE(made.ok());
  TokenConstraint& c = **made;
  EXPECT_FALSE(c.IsComplete());
  for (tokenizer::TokenId id : tok.Encode("true", tokenizer::SpecialTokens::kDisallowed)) {
    ASSERT_TRUE(c.Accept(static_cast<int32_t>(id)));
  }
  EXPECT_FALSE(c.IsComplete());
  EXPECT_FALSE(c.Accept(options.end_ids[0]));  // the response / message close comes first
  const std::vector<int32_t> next = Allowed(c, tok.vocab_size());
  EXPECT_EQ(next, std::vector<int32_t>{static_cast<int32_t>(*tok.SpecialId("<|close|>"))});
  for (tokenizer::TokenId id :
       tok.Encode("<|close|>response<|sep|><|close|>message<|sep|>", tokenizer::SpecialTokens::kAllowed)) {
    ASSERT_TRUE(c.Accept(static_cast<int32_t>(id)));
  }
  EXPECT_TRUE(c.IsComplete());
  std::vector<int32_t> ends = options.end_ids;
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(Allowed(c, tok.vocab_size()), ends);
  auto clone = c.Clone();
  EXPECT_TRUE(clone->IsComplete());
  EXPECT_FALSE(c.Accept(static_cast<int32_t>(*tok.SpecialId("<|open|>"))));
  EXPECT_TRUE(c.Accept(options.end_ids[1]));
}

TEST(JsonConstraint, ReasoningAllowsOnlyTheThinkClose) {
  const Tokenizer& tok = TinyK3();
  auto made = MakeJsonConstraint(tok, json{{"type", "null"}}, Options(tok, true));
  ASSERT_TRUE(made.ok());
  TokenConstraint& c = **made;
  const std::vector<int32_t> allowed = Allowed(c, tok.vocab_size());
  std::vector<int32_t> specials;
  for (int32_t id : allowed) {
    if (tok.IsSpecial(static_cast<tokenizer::TokenId>(id))) specials.push_back(id);
  }
  EXPECT_EQ(specials, std::vector<int32_t>{static_cast<int32_t>(*tok.SpecialId("<|close|>"))});
  EXPECT_GT(allowed.size(), tok.num_ranks() / 2);  // free text
  // Marker names are not allowed as plain text either.
  for (tokenizer::TokenId id : tok.Encode("<|close|", tokenizer::SpecialTokens::kDisallowed)) {
    ASSERT_TRUE(c.Accept(static_cast<int32_t>(id)));
  }
  EXPECT_FALSE(
      c.Accept(static_cast<int32_t>(*tok.Encode(">", tokenizer::SpecialTokens::kDisallowed).begin())));
  const std::string output =
      "<|close|>think<|sep|><|open|>response<|sep|>null<|close|>response<|sep|>"
      "<|close|>message<|sep|>";
  for (tokenizer::TokenId id : tok.Encode(output, tokenizer::SpecialTokens::kAllowed)) {
    ASSERT_TRUE(c.Accept(static_cast<int32_t>(id))) << id;
  }
  EXPECT_TRUE(c.IsComplete());
}

TEST(JsonConstraint, Errors) {
  const Tokenizer& tok = TinyK3();
  auto bad =
      MakeJsonConstraint(tok, json{{"type", "array"}, {"contains", {{"type", "null"}}}}, Options(tok, false));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "response_format schema: keyword 'contains' is not supported in constrained output at #");
  const json endless =
      json::parse(R"({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})");
  auto unsat = MakeJsonConstraint(tok, endless, Options(tok, false));
  ASSERT_FALSE(unsat.ok());
  EXPECT_NE(unsat.status().message().find("no JSON value satisfies it"), std::string::npos);
  ConstraintOptions no_end;
  EXPECT_FALSE(MakeJsonConstraint(tok, json(), no_end).ok());
}

// ---- tool calls ----

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}, "days": {"type": "integer"},
                   "when": {"type": ["string", "null"]}},
    "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "search", "parameters": {
    "type": "object",
    "$defs": {"filter": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
                         "additionalProperties": false}},
    "properties": {"query": {"type": "string"}, "filter": {"$ref": "#/$defs/filter"},
                   "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "exact": {"type": "boolean"}},
    "required": ["query", "limit"]}}},
  {"type": "function", "function": {"name": "ping"}}
])");

const json* ParametersOf(const std::string& name) {
  for (const json& tool : kTools) {
    if (tool["function"]["name"] == name) {
      return tool["function"].contains("parameters") ? &tool["function"]["parameters"] : nullptr;
    }
  }
  return nullptr;
}

void ToolWalks(const std::string& function, bool parallel, bool reasoning, int walks, uint64_t seed) {
  const Tokenizer& tok = TinyK3();
  const ConstraintOptions options = Options(tok, reasoning);
  auto made = MakeToolCallConstraint(tok, kTools, function, parallel, options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::mt19937_64 rng(seed);
  std::set<std::string> names;
  size_t most_calls = 0;
  for (int w = 0; w < walks; ++w) {
    auto constraint = (*made)->Clone();
    Walk walk = RandomWalk(*constraint, tok, options, rng, 16 + w % 32);
    ASSERT_TRUE(walk.ended) << walk.text;
    const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{reasoning, true});
    EXPECT_EQ(parsed.content, "");
    ASSERT_GE(parsed.tool_calls.size(), 1u) << walk.text;
    if (!parallel) {
      EXPECT_EQ(parsed.tool_calls.size(), 1u) << walk.text;
    }
    most_calls = std::max(most_calls, parsed.tool_calls.size());
    for (size_t i = 0; i < parsed.tool_calls.size(); ++i) {
      const ParsedToolCall& call = parsed.tool_calls[i];
      names.insert(call.name);
      EXPECT_EQ(call.index, static_cast<int>(i + 1));
      EXPECT_FALSE(call.used_fallback) << walk.text;
      if (!function.empty()) {
        EXPECT_EQ(call.name, function);
      }
      const json arguments = json::parse(call.arguments, nullptr, false);
      ASSERT_TRUE(arguments.is_object()) << call.arguments;
      const json* parameters = ParametersOf(call.name);
      if (parameters == nullptr) {
        EXPECT_TRUE(call.name == "ping") << call.name;
      } else {
        EXPECT_EQ(Validate(*parameters, arguments), "") << call.arguments << "\nfrom: " << walk.text;
      }
    }
  }
  if (function.empty()) {
    EXPECT_EQ(names.size(), 3u);
  }
  if (parallel) {
    EXPECT_GT(most_calls, 1u);
  }
}

TEST(ToolCallConstraint, MasksAgreeWithAcceptInEveryKindOfState) {
  const Tokenizer& tok = TinyK3();
  auto json_made = MakeJsonConstraint(tok, kOpenMap, Options(tok, true));
  ASSERT_TRUE(json_made.ok());
  CheckMasksAgreeWithAccept(**json_made, 12);
  auto tool_made = MakeToolCallConstraint(tok, kTools, "", true, Options(tok, true));
  ASSERT_TRUE(tool_made.ok());
  CheckMasksAgreeWithAccept(**tool_made, 13);
}

TEST(ToolCallConstraint, RequiredYieldsOneValidCall) { ToolWalks("", false, false, 60, 21); }
TEST(ToolCallConstraint, NamedYieldsThatFunction) {
  ToolWalks("search", false, false, 40, 22);
  ToolWalks("get_weather", false, true, 30, 23);
}
TEST(ToolCallConstraint, ParallelYieldsIndexedCalls) { ToolWalks("", true, true, 40, 24); }

TEST(ToolCallConstraint, ArgumentEncodingMatchesTheRenderer) {
  const Tokenizer& tok = TinyK3();
  auto made = MakeToolCallConstraint(tok, kTools, "get_weather", false, Options(tok, false));
  ASSERT_TRUE(made.ok());
  const std::string output =
      "<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
      "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris \"x\"<|close|>argument<|sep|>"
      "<|open|>argument key=\"days\" type=\"number\"<|sep|>3<|close|>argument<|sep|>"
      "<|open|>argument key=\"when\" type=\"null\"<|sep|>null<|close|>argument<|sep|>"
      "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>";
  for (tokenizer::TokenId id : tok.Encode(output, tokenizer::SpecialTokens::kAllowed)) {
    ASSERT_TRUE((*made)->Accept(static_cast<int32_t>(id)))
        << *tok.Decode(std::vector<tokenizer::TokenId>{id});
  }
  EXPECT_TRUE((*made)->IsComplete());
  // Wrong type attribute, unknown key, missing required key.
  for (std::string bad : {"<|open|>argument key=\"city\" type=\"number\"<|sep|>",
                          "<|open|>argument key=\"town\"", "<|open|>argument key=\"days\""}) {
    auto c = MakeToolCallConstraint(tok, kTools, "get_weather", false, Options(tok, false));
    const std::string text =
        "<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>" +
        bad;
    bool all = true;
    for (tokenizer::TokenId id : tok.Encode(text, tokenizer::SpecialTokens::kAllowed)) {
      all = all && (*c)->Accept(static_cast<int32_t>(id));
    }
    EXPECT_FALSE(all) << bad;
  }
}

// Tool parameters with string keywords: the raw (XTML) argument encoding obeys the DFA too. A plain
// string beside them once read a node reference after the node vector grew (fuzz_json_schema_grammar).
TEST(ToolCallConstraint, StringKeywordsInArguments) {
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "book", "parameters": {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}\\d{2,4}$"},
                   "day": {"type": "string", "format": "date"},
                   "id": {"type": "string", "format": "uuid"},
                   "name": {"type": "string", "minLength": 2, "maxLength": 6},
                   "note": {"type": "string"}},
    "required": ["code", "day", "id", "name"], "additionalProperties": false}}}])");
  const Tokenizer& tok = TinyK3();
  const ConstraintOptions options = Options(tok, false);
  auto made = MakeToolCallConstraint(tok, tools, "book", false, options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::mt19937_64 rng(31);
  for (int w = 0; w < 15; ++w) {
    auto constraint = (*made)->Clone();
    Walk walk = RandomWalk(*constraint, tok, options, rng, 16 + w % 24);
    ASSERT_TRUE(walk.ended) << walk.text;
    const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{false, true});
    ASSERT_EQ(parsed.tool_calls.size(), 1u) << walk.text;
    const json arguments = json::parse(parsed.tool_calls[0].arguments, nullptr, false);
    ASSERT_TRUE(arguments.is_object()) << parsed.tool_calls[0].arguments;
    const json& parameters = tools[0]["function"]["parameters"];
    EXPECT_EQ(Validate(parameters, arguments), "") << parsed.tool_calls[0].arguments;
    EXPECT_EQ(CheckFormats(parameters, parameters, arguments), "") << parsed.tool_calls[0].arguments;
  }
}

// guided_regex: every walk's reply text fully matches the pattern (std::regex as the reference).
// Bounded numbers, tuples and pattern keys in tool-call arguments (numbers as JSON text, pattern keys as
// XTML attribute values).
TEST(ToolCallConstraint, NumericAndPatternKeywordsInArguments) {
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "stock", "parameters": {
    "type": "object",
    "properties": {"qty": {"type": "integer", "minimum": 1, "maximum": 99},
                   "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "multipleOf": 0.125},
                   "pair": {"type": "array", "prefixItems": [{"type": "integer", "maximum": -1}, {"type": "boolean"}],
                            "items": false, "minItems": 2}},
    "patternProperties": {"^tag_[a-z]{1,4}$": {"type": "integer", "minimum": 10, "maximum": 20}},
    "required": ["qty", "pair"], "additionalProperties": false, "maxProperties": 4}}}])");
  const Tokenizer& tok = TinyK3();
  const ConstraintOptions options = Options(tok, false);
  auto made = MakeToolCallConstraint(tok, tools, "stock", false, options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::mt19937_64 rng(37);
  for (int w = 0; w < 20; ++w) {
    auto constraint = (*made)->Clone();
    Walk walk = RandomWalk(*constraint, tok, options, rng, 16 + w % 24);
    ASSERT_TRUE(walk.ended) << walk.text;
    const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{false, true});
    ASSERT_EQ(parsed.tool_calls.size(), 1u) << walk.text;
    EXPECT_FALSE(parsed.tool_calls[0].used_fallback) << walk.text;
    const json arguments = json::parse(parsed.tool_calls[0].arguments, nullptr, false);
    ASSERT_TRUE(arguments.is_object()) << parsed.tool_calls[0].arguments;
    const json& parameters = tools[0]["function"]["parameters"];
    EXPECT_EQ(Validate(Draft7Tuples(parameters), arguments), "") << parsed.tool_calls[0].arguments;
  }
}

TEST(RegexConstraint, RepliesFullyMatch) {
  const Tokenizer& tok = TinyK3();
  const char* kPatterns[] = {
      "[a-z]{3,8}",          "\\d{3}-\\d{4}", "(yes|no)", "[A-Z][a-z]+( [A-Z][a-z]+){0,3}",
      "a\"b\\\\c\\n?[0-9]*", "^x[a-c]?y$"};
  std::mt19937_64 rng(77);
  for (bool reasoning : {false, true}) {
    ConstraintOptions options = Options(tok, reasoning);
    options.max_tokens = 96;
    for (const char* pattern : kPatterns) {
      auto made = MakeRegexConstraint(tok, pattern, options);
      ASSERT_TRUE(made.ok()) << pattern << ": " << made.status().ToString();
      const std::regex reference(pattern, std::regex::ECMAScript);
      for (int w = 0; w < 10; ++w) {
        auto constraint = (*made)->Clone();
        Walk walk = RandomWalk(*constraint, tok, options, rng, 12 + w % 20);
        ASSERT_TRUE(walk.ended) << pattern << ": " << walk.text;
        EXPECT_LE(walk.ids.size(), 96u) << walk.text;
        const ParsedOutput parsed = ParseOutput(walk.text, ParserOptions{reasoning, false});
        EXPECT_TRUE(std::regex_match(parsed.content, reference))
            << "/" << pattern << "/ content '" << parsed.content << "' from " << walk.text;
      }
    }
  }
  const auto error = [&](const std::string& pattern) {
    auto made = MakeRegexConstraint(tok, pattern, Options(tok, false));
    return made.ok() ? std::string("(compiled)") : made.status().ToString();
  };
  EXPECT_NE(error("a(?=b)").find("guided_regex: regex /a(?=b)/: lookahead"), std::string::npos);
  EXPECT_NE(error("<\\|open\\|>").find("XTML marker"), std::string::npos);
}

// guided_choice: the reply is exactly one of the choices, and every choice occurs.
TEST(ChoiceConstraint, RepliesAreOneOfTheChoices) {
  const Tokenizer& tok = TinyK3();
  const std::vector<std::string> choices = {"positive", "negative", "neutral", "a \"quoted\" one", ""};
  ConstraintOptions options = Options(tok, false);
  auto made = MakeChoiceConstraint(tok, choices, options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::mt19937_64 rng(5);
  std::set<std::string> seen;
  for (int w = 0; w < 60; ++w) {
    auto constraint = (*made)->Clone();
    Walk walk = RandomWalk(*constraint, tok, options, rng, 40);
    ASSERT_TRUE(walk.ended) << walk.text;
    const std::string content = ParseOutput(walk.text, ParserOptions{false, false}).content;
    EXPECT_NE(std::find(choices.begin(), choices.end(), content), choices.end()) << content;
    seen.insert(content);
  }
  EXPECT_EQ(seen.size(), choices.size());
  EXPECT_FALSE(MakeChoiceConstraint(tok, {}, options).ok());
  auto marker = MakeChoiceConstraint(tok, {"ok", "x<|open|>y"}, options);
  ASSERT_FALSE(marker.ok());
  EXPECT_NE(marker.status().ToString().find("guided_choice[1]"), std::string::npos);
}

TEST(ToolCallConstraint, Errors) {
  const Tokenizer& tok = TinyK3();
  auto missing = MakeToolCallConstraint(tok, kTools, "nope", false, Options(tok, false));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "tool_choice names function 'nope', which is not in tools");
  const json bad = json::parse(R"([{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0}}}}}])");
  auto unsupported = MakeToolCallConstraint(tok, bad, "", false, Options(tok, false));
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.status().message(),
            "tools[0].function.parameters: multipleOf: must be greater than 0 at #/properties/n/multipleOf");
  auto not_object = MakeToolCallConstraint(
      tok, json::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"array"}}}])"), "",
      false, Options(tok, false));
  EXPECT_FALSE(not_object.ok());
  EXPECT_FALSE(MakeToolCallConstraint(tok, json::array(), "", false, Options(tok, false)).ok());
}

// ---- timings ----

// A K3-sized vocabulary: the 256 bytes, the BPE ranks of the embedded corpus, then distinct corpus
// substrings (2..12 bytes, on UTF-8 boundaries or not) up to 163,584 ranks.
const Tokenizer& LargeVocabulary() {
  static const Tokenizer tokenizer = [] {
    std::vector<std::string> ranks = tokenizer::TrainByteLevelBpe(tokenizer::EmbeddedCorpus(), 4000);
    std::unordered_set<std::string> seen(ranks.begin(), ranks.end());
    const std::string_view corpus = tokenizer::EmbeddedCorpus();
    std::mt19937_64 rng(7);
    while (ranks.size() < 163584) {
      const size_t length = 2 + rng() % 11;
      const size_t start = rng() % (corpus.size() - length);
      std::string piece(corpus.substr(start, length));
      if (seen.insert(piece).second) ranks.push_back(std::move(piece));
    }
    return *Tokenizer::CreateK3(std::move(ranks));
  }();
  return tokenizer;
}

// Mean over `repeats` calls after one warm-up call (which fills the shared per-vocabulary leaf masks).
double MeanFillMicros(TokenConstraint& constraint, size_t vocab, int repeats) {
  std::vector<uint64_t> mask((vocab + 63) / 64);
  constraint.FillAllowed(mask);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) constraint.FillAllowed(mask);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
         repeats;
}

void AcceptText(TokenConstraint& c, const Tokenizer& tok, const std::string& text) {
  for (tokenizer::TokenId id : tok.Encode(text, tokenizer::SpecialTokens::kAllowed)) {
    ASSERT_TRUE(c.Accept(static_cast<int32_t>(id))) << text;
  }
}

TEST(ConstraintTiming, FillAllowedOnTinyAndK3SizedVocabularies) {
  for (const Tokenizer* tok : {&TinyK3(), &LargeVocabulary()}) {
    const auto build_start = std::chrono::steady_clock::now();
    auto made = MakeJsonConstraint(*tok, kProfile, Options(*tok, true));
    ASSERT_TRUE(made.ok());
    const double build_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - build_start).count();
    const int repeats = tok->vocab_size() > 10000 ? 5 : 200;
    auto c = (*made)->Clone();
    AcceptText(*c, *tok, "Let me think.");
    const double reasoning = MeanFillMicros(*c, tok->vocab_size(), repeats);
    AcceptText(*c, *tok, "<|close|>think<|sep|><|open|>response<|sep|>{");
    const double object_start = MeanFillMicros(*c, tok->vocab_size(), repeats);
    AcceptText(*c, *tok, "\"age\":12");
    const double number = MeanFillMicros(*c, tok->vocab_size(), repeats);
    AcceptText(*c, *tok, ",\"kind\":\"person\",\"name\":\"Ada ");
    const double string = MeanFillMicros(*c, tok->vocab_size(), repeats);
    // The same string a few tokens from max_tokens: every token is walked and checked against the budget
    // (ConstraintOptions::max_tokens), as happens for the last few tokens of a budgeted output.
    ConstraintOptions budgeted = Options(*tok, true);
    budgeted.max_tokens = 1000;
    auto tight = MakeJsonConstraint(*tok, kProfile, budgeted);
    ASSERT_TRUE(tight.ok());
    const std::string text =
        "Let me think.<|close|>think<|sep|><|open|>response<|sep|>{\"age\":12,"
        "\"kind\":\"person\",\"name\":\"Ada ";
    const size_t text_tokens = tok->Encode(text, tokenizer::SpecialTokens::kAllowed).size();
    const auto filler = static_cast<int32_t>(tok->Encode("a", tokenizer::SpecialTokens::kDisallowed)[0]);
    for (size_t i = 0; i + text_tokens < 988; ++i) ASSERT_TRUE((*tight)->Accept(filler));  // reasoning
    AcceptText(**tight, *tok, text);  // 12 tokens left now
    const double near_limit = MeanFillMicros(**tight, tok->vocab_size(), repeats);
    std::printf(
        "vocab %zu: first constraint %.1f ms (trie build included); FillAllowed us: reasoning %.0f, "
        "object start %.0f, number %.0f, string %.0f, string near max_tokens %.0f\n",
        tok->vocab_size(), build_ms, reasoning, object_start, number, string, near_limit);
    EXPECT_GT(string, 0.0);
  }
}

}  // namespace
}  // namespace k3::chat
