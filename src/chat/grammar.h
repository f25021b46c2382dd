// The compiled form of a constrained output: a graph of grammar nodes over symbols (bytes 0..255 and
// the three XTML markup specials), built by grammar_compile.h and run by grammar_matcher.h.
//
// Node kinds (what one frame of the matcher's stack matches):
//   kNever       nothing (an unsatisfiable schema; never entered)
//   kLiteralSet  one of a fixed set of symbol strings (const / enum values, booleans, null, markup)
//   kString      a JSON string "..." (every escape, valid UTF-8); kJsonKey mode: an object key without
//                escapes that differs from the declared names; kAttr mode: the rest of an XTML attribute
//                value up to and including its closing quote (no '"', '&', '<'); kRegex mode: a JSON
//                string whose content (written without escapes) is accepted by `dfa`; kRegexRaw mode:
//                the raw text of a tool argument accepted by `dfa`, ended by the next markup special
//   kRawText     free UTF-8 text up to the next markup special (reasoning, raw string tool arguments)
//   kNumber      a JSON number or integer (bounded digit counts, so every value is a finite double); with
//                `dfa`, a number in plain notation accepted by it (numeric keywords, number_schema.h)
//   kObject      a JSON object (or, in args mode, the XTML argument list of a tool call) with
//                minProperties / maxProperties; additional members may be a union (patternProperties)
//   kArray       a JSON array with prefixItems (tuple positions), items, minItems / maxItems
//   kUnion       any one of its children (anyOf / oneOf / type lists / $ref forwarding)
//   kSeq         its children one after another
//   kCallList    one or more tool calls (up to max_calls), the call index counted in the frame
//   kCallIndex   the decimal index of the current call (from the enclosing kCallList)
// Text that is not markup never contains an XTML marker name (marker_filter.h), so the output parser
// sees exactly the structure the grammar produced.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/chat/regex_dfa.h"

namespace k3::chat::grammar {

// Symbols: 0..255 are bytes; the markup specials follow.
inline constexpr int kSymOpen = 256;   // <|open|>
inline constexpr int kSymClose = 257;  // <|close|>
inline constexpr int kSymSep = 258;    // <|sep|>
inline constexpr int kNumSymbols = 259;

// Longest run of nested JSON containers (objects / arrays) a generated value may have.
inline constexpr int kMaxNesting = 32;
inline constexpr int kInfiniteNeed = std::numeric_limits<int>::max() / 2;

// Digit limits of generated numbers: every value parses as a finite double (integers exactly).
inline constexpr uint32_t kMaxIntegerDigits = 15;
inline constexpr uint32_t kMaxFractionDigits = 15;
inline constexpr uint32_t kMaxExponentDigits = 2;

enum class NodeKind : uint8_t {
  kNever,
  kLiteralSet,
  kString,
  kRawText,
  kNumber,
  kObject,
  kArray,
  kUnion,
  kSeq,
  kCallList,
  kCallIndex,
};

// kRegex / kRegexRaw frames keep the DFA state in Frame::b (see grammar_matcher.cc).
enum class StringMode : uint8_t { kJson, kJsonKey, kAttr, kRegex, kRegexRaw };

// A trie of symbol strings; node 0 is the root.
struct SymbolTrie {
  struct TrieNode {
    std::vector<std::pair<int, uint32_t>> children;  // (symbol, node)
    bool terminal = false;
  };
  std::vector<TrieNode> nodes{1};

  void Insert(const std::vector<int>& symbols);
  // The child of node along symbol, or kNone.
  uint32_t Child(uint32_t node, int symbol) const;
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
};

struct Node {
  NodeKind kind = NodeKind::kNever;
  // kLiteralSet: the strings; values (JSON values, when the set came from const / enum / true-false /
  // null) let grammar_compile re-derive the raw-string form for tool arguments.
  SymbolTrie literals;
  std::vector<nlohmann::json> values;
  // kLiteralSet that is the items of a uniqueItems array (IndexLiterals): per trie node, the literal
  // ending there (-1: none) and the bits of the literals at or below it.
  std::vector<int32_t> literal_index;
  std::vector<uint32_t> literal_below;
  // kString
  StringMode string_mode = StringMode::kJson;
  SymbolTrie excluded;  // kJsonKey / kAttr: names the key must differ from (raw bytes)
  // kNumber with numeric keywords: the accepted number texts (never empty, no dead ends).
  // kRegex / kRegexRaw: JSON-safe (no '"', '\\', control bytes), marker-filtered, never empty.
  std::shared_ptr<const regex::ByteDfa> dfa;
  // kNumber
  bool integer = false;
  // kObject: members in output order; each member node matches one key + value (kSeq).
  struct Member {
    std::string name;
    uint32_t node = 0;
    bool required = false;
  };
  std::vector<Member> members;
  std::vector<uint32_t> next_required;  // [i]: first required member index >= i, or members.size()
  int64_t extra_member = -1;            // node of an additional-property member, -1: none allowed
  uint32_t min_properties = 0;          // members a complete object has at least / at most
  uint32_t max_properties = std::numeric_limits<uint32_t>::max();
  bool args_mode = false;  // XTML <|open|>argument ...<|close|>argument<|sep|> list
  // kArray: item i matches prefix_items[i] (prefixItems, tuple positions), later ones `items`.
  std::vector<uint32_t> prefix_items;
  uint32_t items = 0;
  // uniqueItems: `items` is an indexed kLiteralSet of at most kMaxUniqueLiterals values; the array frame
  // keeps the bits of the values written so far in Frame::count.
  bool unique_literals = false;
  uint32_t min_items = 0;
  uint32_t max_items = std::numeric_limits<uint32_t>::max();
  // kUnion / kSeq children; kCallList: children[0] is one call
  std::vector<uint32_t> children;
  uint32_t max_calls = 1;
  // kArray: the node of item `index`.
  uint32_t Item(uint32_t index) const { return index < prefix_items.size() ? prefix_items[index] : items; }
  // Fewest nested containers a complete value needs (kInfiniteNeed: none exists); computed last.
  int need = kInfiniteNeed;
};

struct Grammar {
  std::vector<Node> nodes;
  uint32_t root = 0;

  bool IsContainer(uint32_t node) const {
    return nodes[node].kind == NodeKind::kObject || nodes[node].kind == NodeKind::kArray;
  }
};

// Most values of an enum whose array has uniqueItems (one bit each in a frame).
inline constexpr uint32_t kMaxUniqueLiterals = 32;

// Numbers the literals of a kLiteralSet (Node::literal_index / literal_below); false when it has more than
// kMaxUniqueLiterals.
bool IndexLiterals(Node& node);

// Fills Node::need for every node (fixed point over the graph, so recursive schemas are handled).
void ComputeNeeds(Grammar& grammar);

}  // namespace k3::chat::grammar
