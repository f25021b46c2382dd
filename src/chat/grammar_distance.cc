// Shortest completions of grammar nodes and of matcher states (see grammar_distance.h).
#include "src/chat/grammar_distance.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace k3::chat::grammar {
namespace {

int64_t Add(int64_t a, int64_t b) { return std::min(a + b, kUnreachable); }
int64_t Mul(int64_t a, int64_t k) { return k > 0 && a > kUnreachable / k ? kUnreachable : a * k; }

// A key / attribute string that equals a declared name cannot close yet: one more byte first.
int64_t ExcludedPenalty(const Node& node, const Frame& f) {
  if (node.string_mode == StringMode::kJson || f.b == SymbolTrie::kNone) return 0;
  return node.excluded.nodes[f.b].terminal ? 1 : 0;
}

// kString sub-states (grammar_matcher.cc): symbols to the closing quote, the quote included.
int64_t StringRemaining(const Node& node, const Frame& f) {
  if (f.pos == kStringDone) return 0;
  if (node.string_mode == StringMode::kRegex || node.string_mode == StringMode::kRegexRaw) {
    // The DFA's shortest path to acceptance, plus the quotes still to come (kRegex).
    const regex::ByteDfa& dfa = *node.dfa;
    const int64_t quotes = node.string_mode == StringMode::kRegex ? (f.pos == 0 ? 2 : 1) : 0;
    return Add(dfa.min_to_accept[f.pos == 0 ? dfa.start : static_cast<int32_t>(f.b)], quotes);
  }
  if (f.pos == 0) return (node.string_mode == StringMode::kAttr ? 1 : 2) + ExcludedPenalty(node, f);
  if (f.pos == 1) return 1 + ExcludedPenalty(node, f);
  if (f.pos == 2) return 2;                          // an escape letter, then the quote
  if (f.pos >= 3 && f.pos <= 6) return 8 - f.pos;    // 4 - (pos - 3) hex digits, then the quote
  if (f.pos == 7) return 4;                          // 0-7, two hex digits, the quote
  if (f.pos >= 8 && f.pos <= 15) return 17 - f.pos;  // rest of a surrogate pair, then the quote
  if (f.pos == 20) return 2;                         // UTF-8 continuation bytes, then the quote
  if (f.pos >= 21 && f.pos <= 23) return 3;
  if (f.pos >= 24 && f.pos <= 26) return 4;
  return kUnreachable;
}

int64_t RawTextRemaining(const Frame& f) {
  if (f.pos <= 1) return 0;
  if (f.pos == 20) return 1;
  if (f.pos >= 21 && f.pos <= 23) return 2;
  return 3;
}

// Number states (grammar_matcher.cc): 2, 3, 5 and 8 may end; the others need one digit.
// A bounded number: the DFA's shortest path to acceptance.
int64_t NumberRemaining(const Node& node, const Frame& f) {
  if (node.dfa != nullptr) {
    return node.dfa->min_to_accept[f.pos == 0 ? node.dfa->start : static_cast<int32_t>(f.b)];
  }
  return (f.pos == 2 || f.pos == 3 || f.pos == 5 || f.pos == 8) ? 0 : 1;
}

// Items first .. first + k - 1 of an array (each its node's shortest match) and a separator after each
// (the commas between them and the closing ']').
template <typename LengthOf>
int64_t ItemsCost(const Node& node, uint32_t first, int64_t k, const LengthOf& of) {
  int64_t sum = 0;
  int64_t i = first;
  for (; i < first + k && i < static_cast<int64_t>(node.prefix_items.size()); ++i) {
    sum = Add(sum, Add(of(node.prefix_items[static_cast<size_t>(i)]), 1));
  }
  return Add(sum, Add(Mul(of(node.items), first + k - i), first + k - i));
}

// Members an object still needs for minProperties beyond `have` (members written plus required ones to
// come): the cheapest optional members from index `first` on, each once, or additional members, each
// with `separator` symbols. A lower bound when optional members are cheaper than they can be combined.
template <typename LengthOf>
int64_t MinPropertiesCost(const Node& node, uint32_t first, int64_t have, int64_t separator,
                          const LengthOf& of) {
  if (have >= node.min_properties) return 0;
  std::vector<int64_t> optional;
  for (size_t j = first; j < node.members.size(); ++j) {
    if (!node.members[j].required) optional.push_back(of(node.members[j].node));
  }
  std::sort(optional.begin(), optional.end());
  const int64_t extra = node.extra_member >= 0 ? of(static_cast<uint32_t>(node.extra_member)) : kUnreachable;
  int64_t sum = 0;
  size_t next = 0;
  for (int64_t missing = node.min_properties - have; missing > 0; --missing) {
    if (next < optional.size() && optional[next] <= extra) {
      sum = Add(sum, Add(optional[next++], separator));
    } else {
      return Add(sum, Mul(Add(extra, separator), missing));
    }
  }
  return sum;
}

}  // namespace

void CompletionDistance::ComputeLiteralCosts(uint32_t index, const VocabTrie* vocab) {
  const SymbolTrie& trie = grammar_->nodes[index].literals;
  std::vector<int64_t>& cost = literal_cost_[index];
  cost.assign(trie.nodes.size(), kUnreachable);
  // Children have larger indices than their parent (SymbolTrie::Insert appends), so a reverse pass sees
  // every node after all of its descendants.
  for (size_t p = trie.nodes.size(); p-- > 0;) {
    if (trie.nodes[p].terminal) {
      cost[p] = 0;
      continue;
    }
    for (const auto& [symbol, child] : trie.nodes[p].children) {
      if (symbol > 255 || vocab == nullptr) cost[p] = std::min(cost[p], Add(cost[child], 1));
    }
    if (vocab == nullptr) continue;
    // Byte tokens: walk the vocabulary trie and the literal trie together from p.
    struct Step {
      uint32_t vocab_node;
      uint32_t literal_node;
    };
    std::vector<Step> stack{{0, static_cast<uint32_t>(p)}};
    while (!stack.empty()) {
      const Step at = stack.back();
      stack.pop_back();
      const VocabTrie::TrieNode& v = vocab->nodes[at.vocab_node];
      for (uint32_t e = v.child_begin; e < v.child_end; ++e) {
        const uint32_t next = trie.Child(at.literal_node, vocab->children[e].byte);
        if (next == SymbolTrie::kNone) continue;
        const VocabTrie::TrieNode& child = vocab->nodes[vocab->children[e].node];
        if (child.token_begin < child.token_end) cost[p] = std::min(cost[p], Add(cost[next], 1));
        if (child.child_begin < child.child_end) stack.push_back({vocab->children[e].node, next});
      }
    }
  }
}

CompletionDistance::CompletionDistance(std::shared_ptr<const Grammar> shared, const VocabTrie* vocab)
    : grammar_(std::move(shared)),
      min_length_(grammar_->nodes.size(), kUnreachable),
      literal_cost_(grammar_->nodes.size()) {
  const Grammar& grammar = *grammar_;
  for (uint32_t i = 0; i < grammar.nodes.size(); ++i) {
    if (grammar.nodes[i].kind == NodeKind::kLiteralSet) ComputeLiteralCosts(i, vocab);
  }
  // Relax until stable: lengths only decrease, and every finite one is bounded.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < grammar.nodes.size(); ++i) {
      const Node& node = grammar.nodes[i];
      const auto of = [&](uint32_t id) { return min_length_[id]; };
      int64_t length = kUnreachable;
      switch (node.kind) {
        case NodeKind::kNever:
          break;
        case NodeKind::kLiteralSet:
          length = literal_cost_[i][0];
          break;
        case NodeKind::kString:
          length = StringRemaining(node, Frame{static_cast<uint32_t>(i), 0, 0, 0, 0});
          break;
        case NodeKind::kRawText:
          length = 0;
          break;
        case NodeKind::kNumber:
          length = NumberRemaining(node, Frame{static_cast<uint32_t>(i), 0, 0, 0, 0});
          break;
        case NodeKind::kCallIndex:
          length = 1;
          break;
        case NodeKind::kObject: {
          int64_t required = 0;
          length = 0;
          for (const Node::Member& member : node.members) {
            if (!member.required) continue;
            length = Add(length, of(member.node));
            ++required;
          }
          length = Add(length, MinPropertiesCost(node, 0, required, 0, of));  // separators below
          required = std::max<int64_t>(required, node.min_properties);
          // '{' '}' and the commas between members; the args-mode list has no separators.
          if (!node.args_mode) length = Add(length, 2 + std::max<int64_t>(0, required - 1));
          break;
        }
        case NodeKind::kArray:
          if (node.min_items > node.max_items) break;
          length = node.min_items == 0 ? 2 : Add(ItemsCost(node, 0, node.min_items, of), 1);
          break;
        case NodeKind::kUnion:
          for (uint32_t child : node.children) length = std::min(length, of(child));
          break;
        case NodeKind::kSeq:
          length = 0;
          for (uint32_t child : node.children) length = Add(length, of(child));
          break;
        case NodeKind::kCallList:
          length = of(node.children[0]);
          break;
      }
      if (length < min_length_[i]) {
        min_length_[i] = length;
        changed = true;
      }
    }
  }
}

int64_t CompletionDistance::Remaining(const Frame* frames, size_t index, const Frame& f) const {
  const Node& node = grammar_->nodes[f.node];
  const auto of = [&](uint32_t id) { return min_length_[id]; };
  const auto n = static_cast<uint32_t>(node.members.size());
  // Required members from `first` on, each preceded by `separator` symbols.
  const auto required_from = [&](uint32_t first, int64_t separator, int64_t* count) {
    int64_t sum = 0;
    *count = 0;
    for (uint32_t j = first; j < n; ++j) {
      if (!node.members[j].required) continue;
      sum = Add(sum, Add(of(node.members[j].node), separator));
      ++*count;
    }
    return sum;
  };
  int64_t count = 0;
  switch (node.kind) {
    case NodeKind::kNever:
      return kUnreachable;
    case NodeKind::kLiteralSet:
      return literal_cost_[f.node][f.pos];
    case NodeKind::kString:
      return StringRemaining(node, f);
    case NodeKind::kRawText:
      return RawTextRemaining(f);
    case NodeKind::kNumber:
      return NumberRemaining(node, f);
    case NodeKind::kObject: {
      if (node.args_mode) {
        const uint32_t first = f.pos == kObjAfter ? std::min(f.a + 1, n) : (f.pos == kObjOpen ? 0 : f.a);
        const int64_t required = required_from(first, 0, &count);
        return Add(required, MinPropertiesCost(node, first, f.count + count, 0, of));
      }
      switch (f.pos) {
        case kObjOpen:
          return of(f.node);
        case kObjMembers: {
          int64_t required = required_from(f.a, 1, &count);
          if (f.count + count < node.min_properties) {
            required = Add(required, MinPropertiesCost(node, f.a, f.count + count, 1, of));
            count = node.min_properties - f.count;
          }
          if (count > 0) return required;   // count - 1 commas + '}' == count separators
          if (f.b == 0) return 1;           // '}'
          int64_t shortest = kUnreachable;  // after a comma: some member, then '}'
          for (uint32_t j = f.a; j < n; ++j) shortest = std::min(shortest, of(node.members[j].node));
          if (node.extra_member >= 0)
            shortest = std::min(shortest, of(static_cast<uint32_t>(node.extra_member)));
          return Add(shortest, 1);
        }
        case kObjIn:
        case kObjAfter: {
          const uint32_t next = f.a >= n ? n : f.a + 1;
          const int64_t required = required_from(next, 1, &count);
          // ",member"... then '}'
          return Add(Add(required, MinPropertiesCost(node, next, f.count + count, 1, of)), 1);
        }
        default:
          return 0;
      }
    }
    case NodeKind::kArray: {
      // k items from index f.a on, the k - 1 commas between them and ']'.
      const auto items = [&](int64_t k) { return ItemsCost(node, f.a, k, of); };
      switch (f.pos) {
        case kArrOpen:
          return of(f.node);
        case kArrFirst:
          return node.min_items == 0 ? 1 : items(node.min_items);
        case kArrIn:
        case kArrAfter:
          return f.a >= node.min_items ? 1 : Add(items(node.min_items - f.a), 1);  // ','s before each
        case kArrNext:
          return items(std::max<int64_t>(1, static_cast<int64_t>(node.min_items) - f.a));
        default:
          return 0;
      }
    }
    case NodeKind::kUnion:
      return of(f.node);
    case NodeKind::kSeq: {
      int64_t sum = 0;
      for (size_t c = (f.pos + 1) / 2; c < node.children.size(); ++c) sum = Add(sum, of(node.children[c]));
      return sum;
    }
    case NodeKind::kCallList:
      return f.pos == 0 && f.a >= 1 ? 0 : (f.pos == 0 ? of(node.children[0]) : 0);
    case NodeKind::kCallIndex: {
      if (f.pos > 0) return static_cast<int64_t>(std::to_string(f.a).size()) - f.pos;
      uint32_t call = 1;  // the index this call will have: one past the enclosing list's count
      for (size_t i = index; i-- > 0;) {
        if (grammar_->nodes[frames[i].node].kind == NodeKind::kCallList) {
          call = frames[i].a + 1;
          break;
        }
      }
      return static_cast<int64_t>(std::to_string(call).size());
    }
  }
  return kUnreachable;
}

int64_t CompletionDistance::operator()(const MatchState& state, const Matcher& matcher) const {
  int64_t best = kUnreachable;
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    const Frame* frames = state.frames.data() + begin;
    const size_t size = end - begin;
    begin = end;
    if (size == 0) continue;
    int64_t total = Remaining(frames, size - 1, frames[size - 1]);
    for (size_t i = size - 1; i-- > 0 && total < best;) {
      Frame parent = frames[i];
      matcher.ChildDone(parent);
      total = Add(total, Remaining(frames, i, parent));
    }
    best = std::min(best, total);
  }
  return best;
}

}  // namespace k3::chat::grammar
