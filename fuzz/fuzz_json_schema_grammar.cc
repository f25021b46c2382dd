// libFuzzer target for the JSON Schema grammar: a schema from the input (after two control bytes) either
// compiles or fails with InvalidArgument; when it compiles, a bounded random walk through the allowed
// masks (seeded from the input) never meets an empty mask or a refused allowed token, and a walk that
// completes parses (chat::ParseOutput) into JSON content, or into tool calls whose arguments are JSON
// objects decoded without fallback. The end check's validator (schema_validator.h) then reads each value
// against the schema, without crashing or running away on $ref cycles, and a violation's message starts
// with its keyword (seeds not_* and unique_* reach `not` and `uniqueItems`).
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/chat/json_schema_grammar.h"
#include "src/chat/output_parser.h"
#include "src/chat/schema_validator.h"
#include "src/tokenizer/bpe_trainer.h"

namespace {

using k3::tokenizer::Tokenizer;

const Tokenizer& Vocabulary() {
  static const Tokenizer tokenizer = *Tokenizer::CreateK3(
      k3::tokenizer::TrainByteLevelBpe(k3::tokenizer::EmbeddedCorpus().substr(0, 60'000), 600));
  return tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 4096) return 0;
  const uint8_t flags = data[0];
  const uint8_t seed = data[1];
  const nlohmann::json schema = nlohmann::json::parse(
      std::string_view(reinterpret_cast<const char*>(data + 2), size - 2), nullptr, false);
  if (schema.is_discarded()) return 0;
  const Tokenizer& tok = Vocabulary();
  k3::chat::ConstraintOptions options;
  options.end_ids = {static_cast<int32_t>(*tok.SpecialId("<|end_of_msg|>"))};
  options.allow_reasoning = (flags & 2) != 0;
  const bool tools = (flags & 1) != 0;
  auto made = tools ? k3::chat::MakeToolCallConstraint(
                          tok,
                          nlohmann::json::array({{{"type", "function"},
                                                  {"function", {{"name", "f"}, {"parameters", schema}}}}}),
                          "", (flags & 4) != 0, options)
                    : k3::chat::MakeJsonConstraint(tok, schema, options);
  if (!made.ok()) {
    if (made.status().code() != k3::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  k3::chat::TokenConstraint& constraint = **made;
  std::mt19937_64 rng(seed + (size << 8));
  std::vector<uint64_t> mask((tok.vocab_size() + 63) / 64);
  std::vector<k3::tokenizer::TokenId> ids;
  bool ended = false;
  for (int step = 0; step < 300 && !ended; ++step) {
    constraint.FillAllowed(mask);
    std::vector<int32_t> allowed, closing;
    for (size_t id = 0; id < tok.vocab_size(); ++id) {
      if (((mask[id / 64] >> (id % 64)) & 1) == 0) continue;
      allowed.push_back(static_cast<int32_t>(id));
      const std::string_view bytes = *tok.TokenBytes(static_cast<k3::tokenizer::TokenId>(id));
      if (tok.IsSpecial(static_cast<k3::tokenizer::TokenId>(id)) ||
          bytes.find_first_of("\"]}") != std::string::npos) {
        closing.push_back(static_cast<int32_t>(id));
      }
    }
    if (allowed.empty()) __builtin_trap();  // a live state always has a way forward
    const std::vector<int32_t>& pool = step >= 40 && !closing.empty() ? closing : allowed;
    const int32_t id = pool[rng() % pool.size()];
    ended = constraint.IsComplete();
    if (!constraint.Accept(id)) __builtin_trap();
    ids.push_back(static_cast<k3::tokenizer::TokenId>(id));
  }
  if (!ended) return 0;
  const auto text = tok.Decode(ids);
  const k3::chat::ParsedOutput parsed =
      k3::chat::ParseOutput(*text, k3::chat::ParserOptions{options.allow_reasoning, tools});
  std::vector<std::string> values;  // the JSON texts the schema applies to
  if (tools) {
    if (parsed.tool_calls.empty()) __builtin_trap();
    for (const k3::chat::ParsedToolCall& call : parsed.tool_calls) {
      if (call.used_fallback || call.name != "f") __builtin_trap();
      if (!nlohmann::json::parse(call.arguments, nullptr, false).is_object()) __builtin_trap();
      values.push_back(call.arguments);
    }
  } else if (nlohmann::json::parse(parsed.content, nullptr, false).is_discarded()) {
    __builtin_trap();
  } else {
    values.push_back(parsed.content);
  }
  for (const std::string& text : values) {
    const auto violation = k3::chat::FindSchemaViolation(
        tools && schema.is_null() ? nlohmann::json::object() : schema, nlohmann::json::parse(text));
    if (!violation) continue;
    if (violation->Message().rfind(violation->keyword + ": ", 0) != 0) __builtin_trap();
  }
  return 0;
}
