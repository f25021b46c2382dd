// The TokenConstraint over a compiled grammar, and the two output programs: a JSON value in the
// response channel, and the XTML tools channel with one or more calls.
#include "src/chat/json_schema_grammar.h"

#include <algorithm>
#include <array>
#include <limits>
#include <mutex>

#include "src/chat/grammar_compile.h"
#include "src/chat/grammar_distance.h"
#include "src/chat/grammar_matcher.h"
#include "src/chat/grammar_vocab.h"
#include "src/chat/json_text.h"
#include "src/chat/regex_constraint.h"
#include "src/chat/string_schema.h"

namespace k3::chat {
namespace {

using grammar::GrammarBuilder;
using grammar::kSymClose;
using grammar::kSymOpen;
using grammar::kSymSep;
using grammar::MatchState;

// Most tool calls one constrained output may hold with parallel_tool_calls.
constexpr uint32_t kMaxParallelCalls = 32;

// Text with the markup specials written by name ("<|open|>tools<|sep|>") -> symbols.
std::vector<int> Markup(std::string_view text) {
  std::vector<int> symbols;
  for (size_t i = 0; i < text.size();) {
    bool special = false;
    for (auto [name, symbol] : {std::pair<std::string_view, int>{"<|open|>", kSymOpen},
                                std::pair<std::string_view, int>{"<|close|>", kSymClose},
                                std::pair<std::string_view, int>{"<|sep|>", kSymSep}}) {
      if (text.substr(i, name.size()) == name) {
        symbols.push_back(symbol);
        i += name.size();
        special = true;
        break;
      }
    }
    if (!special) symbols.push_back(static_cast<uint8_t>(text[i++]));
  }
  return symbols;
}

class GrammarConstraint final : public TokenConstraint {
 public:
  GrammarConstraint(const tokenizer::Tokenizer& tokenizer, std::shared_ptr<const grammar::Grammar> g,
                    std::shared_ptr<const grammar::VocabTrie> vocab, const ConstraintOptions& options)
      : tokenizer_(tokenizer),
        vocab_(std::move(vocab)),
        end_ids_(options.end_ids),
        max_tokens_(options.max_tokens),
        in_reasoning_(options.allow_reasoning),
        matcher_(g),
        distance_(std::make_shared<const grammar::CompletionDistance>(g, vocab_.get())) {
    state_ = matcher_.Initial();
    complete_ = matcher_.IsComplete(state_);
  }

  void FillAllowed(std::span<uint64_t> mask) override {
    std::fill(mask.begin(), mask.end(), 0);
    if (complete_) {
      for (int32_t id : end_ids_) Set(mask, id);
      return;
    }
    if (max_tokens_ > 0) {
      // Tokens left, this one included. Reasoning past half the budget may only end (once inside a
      // multi-byte character, after finishing it).
      const int64_t remaining = max_tokens_ - generated_;
      const bool only_markup = in_reasoning_ && generated_ >= max_tokens_ / 2;
      if (Fill(mask, remaining, only_markup)) return;
      if (only_markup && Fill(mask, remaining, false)) return;
      // Nothing fits (max_tokens below the shortest output): the grammar alone; the output ends at length.
    }
    Fill(mask, kNoLimit, false);
  }

  bool Accept(int32_t token) override {
    if (complete_) return std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end();
    if (token < 0) return false;
    for (auto [id, symbol] : vocab_->markup) {
      if (id != token) continue;
      if (!matcher_.Advance(state_, symbol, scratch_)) return false;
      std::swap(state_, scratch_);
      Accepted();
      in_reasoning_ = false;  // reasoning is free text: the first markup ends it
      return true;
    }
    if (static_cast<size_t>(token) >= tokenizer_.num_ranks()) return false;  // other specials
    const std::string& bytes = tokenizer_.ranks()[static_cast<size_t>(token)];
    if (bytes.empty()) return false;
    MatchState current = state_;
    for (char c : bytes) {
      if (!matcher_.Advance(current, static_cast<uint8_t>(c), scratch_)) return false;
      std::swap(current, scratch_);
    }
    state_ = std::move(current);
    Accepted();
    return true;
  }

  bool IsComplete() const override { return complete_; }

  std::unique_ptr<TokenConstraint> Clone() const override {
    return std::unique_ptr<TokenConstraint>(new GrammarConstraint(*this));
  }

 private:
  GrammarConstraint(const GrammarConstraint& other) = default;

  static void Set(std::span<uint64_t> mask, int32_t id) {
    const auto word = static_cast<size_t>(id) / 64;
    if (id >= 0 && word < mask.size()) mask[word] |= uint64_t{1} << (static_cast<uint32_t>(id) % 64);
  }

  void Accepted() {
    matcher_.Settle(state_);
    complete_ = matcher_.IsComplete(state_);
    ++generated_;
  }

  static constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

  // A token leading to `next` fits limit_ (tokens left, it included) when the shortest completion after
  // it and the end id still fit.
  bool Fits(const MatchState& next) const {
    return limit_ == kNoLimit || (*distance_)(next, matcher_) + 2 <= limit_;
  }

  // Fills the mask with the grammar's next tokens that fit `limit` (tokens left, this one included;
  // kNoLimit: all), only markup ones with only_markup.
  // Returns whether any was allowed.
  bool Fill(std::span<uint64_t> mask, int64_t limit, bool only_markup) {
    limit_ = limit;
    bool any = false;
    const auto set = [&mask, &any](int32_t id) {
      Set(mask, id);
      any = true;
    };
    for (auto [id, symbol] : vocab_->markup) {
      if (matcher_.Advance(state_, symbol, scratch_) && Fits(scratch_)) set(id);
    }
    if (only_markup) return any;
    if (levels_.size() < vocab_->max_token_bytes + 1) levels_.resize(vocab_->max_token_bytes + 1);
    grammar::Frame leaf;
    // Tokens staying inside a leaf lengthen the shortest completion by at most kLeafGrowth symbols (an
    // open escape or UTF-8 sequence), so they fit unchecked while that much room is left; closer to the
    // limit every token is walked and checked.
    constexpr int64_t kLeafGrowth = 9;
    if (matcher_.SingleLeaf(state_, &leaf) &&
        (limit == kNoLimit || (*distance_)(state_, matcher_) + kLeafGrowth + 2 <= limit)) {
      // Inside free text or a string: the tokens that stay inside come from a shared cached mask; only
      // tokens with a '"' can leave a string, and those are walked with the whole state.
      const grammar::Node& node = matcher_.grammar().nodes[leaf.node];
      const std::vector<uint64_t>& inside = InsideMask(node, leaf);
      for (size_t w = 0; w < mask.size() && w < inside.size(); ++w) {
        mask[w] |= inside[w];
        any = any || inside[w] != 0;
      }
      after_quote_.fill(-1);
      if (node.kind == grammar::NodeKind::kString) WalkStringExits(0, leaf, node, 0, set);
      return any;
    }
    Walk(0, state_, 0, set);
    return any;
  }

  // first_bytes (optional): per first byte, whether the state takes it (1), not (0) or unknown (-1),
  // shared by walks from states that behave alike on their first byte; refusals are skipped unstepped.
  template <typename Set>
  void Walk(uint32_t node, const MatchState& state, size_t depth, const Set& set,
            std::array<int8_t, 256>* first_bytes = nullptr) {
    const grammar::VocabTrie::TrieNode& n = vocab_->nodes[node];
    for (uint32_t e = n.child_begin; e < n.child_end; ++e) {
      const grammar::VocabTrie::Edge edge = vocab_->children[e];
      if (first_bytes != nullptr && (*first_bytes)[edge.byte] == 0) continue;
      MatchState& next = levels_[depth];
      const bool taken = matcher_.Advance(state, edge.byte, next);
      if (first_bytes != nullptr) (*first_bytes)[edge.byte] = taken ? 1 : 0;
      if (!taken) continue;
      const grammar::VocabTrie::TrieNode& child = vocab_->nodes[edge.node];
      if (child.token_begin < child.token_end && Fits(next)) {
        for (uint32_t t = child.token_begin; t < child.token_end; ++t) set(vocab_->tokens[t]);
      }
      if (child.child_begin < child.child_end) Walk(edge.node, next, depth + 1, set);
    }
  }

  // Tokens whose bytes all stay inside a leaf in the given sub-state (cached per vocabulary).
  const std::vector<uint64_t>& InsideMask(const grammar::Node& node, const grammar::Frame& leaf) {
    const uint64_t key = static_cast<uint64_t>(node.kind) | static_cast<uint64_t>(node.string_mode) << 8 |
                         static_cast<uint64_t>(leaf.pos) << 16 | static_cast<uint64_t>(leaf.a) << 32;
    std::lock_guard<std::mutex> lock(vocab_->leaf_mutex);
    auto& slot = vocab_->leaf_masks[key];
    if (slot == nullptr) {
      grammar::Node neutral;  // same kind and mode, no excluded names (they only matter at the quote)
      neutral.kind = node.kind;
      neutral.string_mode = node.string_mode;
      grammar::Frame start = leaf;
      start.b = grammar::SymbolTrie::kNone;
      auto bits = std::make_shared<std::vector<uint64_t>>((vocab_->vocab_size + 63) / 64, 0);
      WalkInside(0, start, neutral, *bits);
      slot = std::move(bits);
    }
    return *slot;
  }

  void WalkInside(uint32_t node, const grammar::Frame& leaf, const grammar::Node& kind,
                  std::vector<uint64_t>& bits) const {
    const grammar::VocabTrie::TrieNode& n = vocab_->nodes[node];
    for (uint32_t e = n.child_begin; e < n.child_end; ++e) {
      const grammar::VocabTrie::Edge edge = vocab_->children[e];
      grammar::Frame next = leaf;
      if (!grammar::StepLeaf(kind, next, edge.byte) || next.pos == grammar::kStringDone) continue;
      const grammar::VocabTrie::TrieNode& child = vocab_->nodes[edge.node];
      for (uint32_t t = child.token_begin; t < child.token_end; ++t) {
        const auto id = static_cast<uint32_t>(vocab_->tokens[t]);
        bits[id / 64] |= uint64_t{1} << (id % 64);
      }
      if (child.child_begin < child.child_end) WalkInside(edge.node, next, kind, bits);
    }
  }

  // Tokens that close the string (somewhere after their first byte) and go on in the enclosing value.
  template <typename Set>
  void WalkStringExits(uint32_t node, const grammar::Frame& leaf, const grammar::Node& kind, size_t depth,
                       const Set& set) {
    const grammar::VocabTrie::TrieNode& n = vocab_->nodes[node];
    for (uint32_t e = n.child_begin; e < n.child_end; ++e) {
      const grammar::VocabTrie::Edge edge = vocab_->children[e];
      if (!vocab_->quote_below[edge.node]) continue;
      grammar::Frame next = leaf;
      if (!grammar::StepLeaf(kind, next, edge.byte)) continue;
      if (next.pos != grammar::kStringDone) {
        WalkStringExits(edge.node, next, kind, depth + 1, set);
        continue;
      }
      MatchState& full = levels_[depth];
      full = state_;
      full.frames.back() = next;
      const grammar::VocabTrie::TrieNode& child = vocab_->nodes[edge.node];
      if (child.token_begin < child.token_end && Fits(full)) {
        for (uint32_t t = child.token_begin; t < child.token_end; ++t) set(vocab_->tokens[t]);
      }
      // Which bytes may follow the closing quote is the same for every exit (the stack below the string
      // does not change inside it), so each refused byte is stepped once per FillAllowed, not per exit.
      if (child.child_begin < child.child_end) Walk(edge.node, full, depth + 1, set, &after_quote_);
    }
  }

  const tokenizer::Tokenizer& tokenizer_;
  std::shared_ptr<const grammar::VocabTrie> vocab_;
  std::vector<int32_t> end_ids_;
  int64_t max_tokens_ = 0;  // 0: no budget
  int64_t generated_ = 0;   // tokens accepted so far
  bool in_reasoning_ = false;
  int64_t limit_ = kNoLimit;  // during Fill: tokens left, this one included
  grammar::Matcher matcher_;
  std::shared_ptr<const grammar::CompletionDistance> distance_;
  MatchState state_;
  MatchState scratch_;
  std::vector<MatchState> levels_;  // one state per trie depth during FillAllowed
  std::array<int8_t, 256> after_quote_{};
  bool complete_ = false;
};

// The common frame of both programs: [reasoning, think close, response open] body [closing markup].
Result<std::unique_ptr<TokenConstraint>> Build(const tokenizer::Tokenizer& tokenizer, GrammarBuilder& builder,
                                               std::vector<uint32_t> body, const ConstraintOptions& options) {
  if (options.end_ids.empty()) {
    return InvalidArgument("constrained output needs at least one end id (e.g. <|end_of_msg|>)");
  }
  for (int32_t id : options.end_ids) {
    if (id < 0 || static_cast<size_t>(id) >= tokenizer.vocab_size()) {
      return InvalidArgument("end id {} is outside the vocabulary (size {})", id, tokenizer.vocab_size());
    }
  }
  K3_ASSIGN_OR_RETURN(auto vocab, grammar::GetVocabTrie(tokenizer));
  std::vector<uint32_t> parts;
  if (options.allow_reasoning) {
    parts.push_back(builder.RawText());
    parts.push_back(builder.Literal(Markup("<|close|>think<|sep|><|open|>response<|sep|>")));
  }
  parts.insert(parts.end(), body.begin(), body.end());
  const uint32_t root = builder.Seq(std::move(parts));
  return std::unique_ptr<TokenConstraint>(
      std::make_unique<GrammarConstraint>(tokenizer, builder.Finish(root), std::move(vocab), options));
}

}  // namespace

Result<std::unique_ptr<TokenConstraint>> MakeJsonConstraint(const tokenizer::Tokenizer& tokenizer,
                                                            const nlohmann::json& schema,
                                                            const ConstraintOptions& options) {
  GrammarBuilder builder;
  uint32_t value = 0;
  if (schema.is_null()) {
    value = builder.AnyJsonObject();
  } else {
    K3_ASSIGN_OR_RETURN(value, builder.JsonValue(schema, "response_format schema"));
  }
  builder.UpdateNeeds();
  if (!builder.Satisfiable(value)) {
    return InvalidArgument(
        "response_format schema: no JSON value satisfies it within {} nested objects/arrays at #",
        grammar::kMaxNesting);
  }
  const uint32_t close = builder.Literal(Markup("<|close|>response<|sep|><|close|>message<|sep|>"));
  return Build(tokenizer, builder, {value, close}, options);
}

Result<std::unique_ptr<TokenConstraint>> MakeToolCallConstraint(const tokenizer::Tokenizer& tokenizer,
                                                                const nlohmann::json& tools,
                                                                const std::string& function_name,
                                                                bool parallel_tool_calls,
                                                                const ConstraintOptions& options) {
  if (!tools.is_array() || tools.empty()) return InvalidArgument("tools: must be a non-empty array");
  GrammarBuilder builder;
  std::vector<uint32_t> calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::json& tool = tools[i];
    const std::string where = fmt::format("tools[{}]", i);
    if (!tool.is_object() || tool.value("type", "function") != "function") continue;
    if (!tool.contains("function") || !tool["function"].is_object() || !tool["function"].contains("name") ||
        !tool["function"]["name"].is_string()) {
      return InvalidArgument("{}.function.name: missing or not a string", where);
    }
    const nlohmann::json& function = tool["function"];
    const std::string name = function["name"].get<std::string>();
    if (!function_name.empty() && name != function_name) continue;
    if (name.empty()) return InvalidArgument("{}.function.name: empty", where);
    const nlohmann::json parameters = function.value("parameters", nlohmann::json());
    K3_ASSIGN_OR_RETURN(uint32_t arguments,
                        builder.ToolArguments(parameters, where + ".function.parameters"));
    builder.UpdateNeeds();
    if (!builder.Satisfiable(arguments)) {
      if (!function_name.empty()) {
        return InvalidArgument("{}.function.parameters: no arguments object satisfies it at #", where);
      }
      continue;
    }
    calls.push_back(builder.Seq({builder.Literal(grammar::TextSymbols(EscapeAttribute(name) + "\" index=\"")),
                                 builder.CallIndex(), builder.Literal(Markup("\"<|sep|>")), arguments,
                                 builder.Literal(Markup("<|close|>call<|sep|>"))}));
  }
  if (calls.empty()) {
    if (!function_name.empty()) {
      return InvalidArgument("tool_choice names function '{}', which is not in tools", function_name);
    }
    return InvalidArgument("tools: no function tool whose parameters can be satisfied");
  }
  const uint32_t call =
      builder.Seq({builder.Literal(Markup("<|open|>call tool=\"")), builder.Union(std::move(calls))});
  const uint32_t list = builder.CallList(call, parallel_tool_calls ? kMaxParallelCalls : 1);
  return Build(tokenizer, builder,
               {builder.Literal(Markup("<|close|>response<|sep|><|open|>tools<|sep|>")), list,
                builder.Literal(Markup("<|close|>tools<|sep|><|close|>message<|sep|>"))},
               options);
}

// guided_regex (regex_constraint.h).
Result<std::unique_ptr<TokenConstraint>> MakeRegexConstraint(const tokenizer::Tokenizer& tokenizer,
                                                             const std::string& pattern,
                                                             const ConstraintOptions& options) {
  K3_ASSIGN_OR_RETURN(
      regex::ByteDfa dfa,
      grammar::CompileConstrainedRegex(pattern, /*full_match=*/true, "guided_regex", /*json_safe=*/false));
  if (dfa.Empty()) {
    return InvalidArgument("guided_regex: no text matches /{}/ without spelling an XTML marker name",
                           pattern);
  }
  GrammarBuilder builder;
  const uint32_t text = builder.RegexText(std::make_shared<const regex::ByteDfa>(std::move(dfa)));
  const uint32_t close = builder.Literal(Markup("<|close|>response<|sep|><|close|>message<|sep|>"));
  return Build(tokenizer, builder, {text, close}, options);
}

// guided_choice (regex_constraint.h).
Result<std::unique_ptr<TokenConstraint>> MakeChoiceConstraint(const tokenizer::Tokenizer& tokenizer,
                                                              const std::vector<std::string>& choices,
                                                              const ConstraintOptions& options) {
  if (choices.empty()) return InvalidArgument("guided_choice: must be a non-empty list of strings");
  for (size_t i = 0; i < choices.size(); ++i) {
    if (grammar::ContainsMarker(choices[i])) {
      return InvalidArgument("guided_choice[{}]: contains an XTML marker name, which a reply cannot hold", i);
    }
  }
  GrammarBuilder builder;
  const uint32_t text = builder.LiteralChoices(choices);
  const uint32_t close = builder.Literal(Markup("<|close|>response<|sep|><|close|>message<|sep|>"));
  return Build(tokenizer, builder, {text, close}, options);
}

}  // namespace k3::chat
