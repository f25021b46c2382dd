// Symbol tries and the nesting-need fixed point of a Grammar.
#include "src/chat/grammar.h"

#include <algorithm>
#include <bit>
#include <vector>

namespace k3::chat::grammar {

void SymbolTrie::Insert(const std::vector<int>& symbols) {
  uint32_t node = 0;
  for (int symbol : symbols) {
    uint32_t child = Child(node, symbol);
    if (child == kNone) {
      child = static_cast<uint32_t>(nodes.size());
      nodes[node].children.emplace_back(symbol, child);
      nodes.emplace_back();
    }
    node = child;
  }
  nodes[node].terminal = true;
}

uint32_t SymbolTrie::Child(uint32_t node, int symbol) const {
  for (const auto& [s, child] : nodes[node].children) {
    if (s == symbol) return child;
  }
  return kNone;
}

bool IndexLiterals(Node& node) {
  const SymbolTrie& trie = node.literals;
  node.literal_index.assign(trie.nodes.size(), -1);
  node.literal_below.assign(trie.nodes.size(), 0);
  int32_t count = 0;
  for (size_t i = 0; i < trie.nodes.size(); ++i) {
    if (!trie.nodes[i].terminal) continue;
    if (count >= static_cast<int32_t>(kMaxUniqueLiterals)) {  // not indexed: the node stays as it was
      node.literal_index.clear();
      node.literal_below.clear();
      return false;
    }
    node.literal_index[i] = count++;
  }
  // Children have larger indices than their parents (Insert appends): a reverse pass sees them first.
  for (size_t i = trie.nodes.size(); i-- > 0;) {
    if (node.literal_index[i] >= 0) node.literal_below[i] |= uint32_t{1} << node.literal_index[i];
    for (const auto& [symbol, child] : trie.nodes[i].children)
      node.literal_below[i] |= node.literal_below[child];
  }
  return true;
}

void ComputeNeeds(Grammar& grammar) {
  for (Node& node : grammar.nodes) node.need = kInfiniteNeed;
  // Relax until stable: needs only decrease, and each is kInfiniteNeed or at most the node count.
  bool changed = true;
  while (changed) {
    changed = false;
    for (Node& node : grammar.nodes) {
      int need = kInfiniteNeed;
      const auto of = [&](uint32_t id) { return grammar.nodes[id].need; };
      switch (node.kind) {
        case NodeKind::kNever:
          break;
        case NodeKind::kLiteralSet:
          need = node.literals.nodes.size() > 1 || node.literals.nodes[0].terminal ? 0 : kInfiniteNeed;
          break;
        case NodeKind::kString:
        case NodeKind::kRawText:
        case NodeKind::kNumber:
        case NodeKind::kCallIndex:
          need = 0;
          break;
        case NodeKind::kObject: {
          int inner = 0;
          uint32_t required = 0;
          std::vector<int> optional;  // needs of the optional members, for minProperties
          for (const Node::Member& member : node.members) {
            if (member.required) {
              inner = std::max(inner, of(member.node));
              ++required;
            } else {
              optional.push_back(of(member.node));
            }
          }
          // minProperties beyond the required members: the shallowest optional / additional members.
          std::sort(optional.begin(), optional.end());
          const int extra =
              node.extra_member >= 0 ? of(static_cast<uint32_t>(node.extra_member)) : kInfiniteNeed;
          size_t next_optional = 0;
          for (uint64_t have = required; have < node.min_properties; ++have) {
            if (next_optional < optional.size() && optional[next_optional] <= extra) {
              inner = std::max(inner, optional[next_optional++]);
            } else {
              inner = std::max(inner, extra);  // the rest are additional members alike
              break;
            }
          }
          if (required > node.max_properties || node.min_properties > node.max_properties)
            inner = kInfiniteNeed;
          need = inner >= kInfiniteNeed ? kInfiniteNeed : inner + 1;
          break;
        }
        case NodeKind::kArray: {
          int inner = 0;  // the deepest of the first min_items items
          for (size_t i = 0; i < node.prefix_items.size() && i < node.min_items; ++i) {
            inner = std::max(inner, of(node.prefix_items[i]));
          }
          if (node.min_items > node.prefix_items.size()) inner = std::max(inner, of(node.items));
          if (node.unique_literals && node.min_items > static_cast<uint32_t>(std::popcount(
                                                           grammar.nodes[node.items].literal_below[0]))) {
            inner = kInfiniteNeed;  // more distinct items than the enum has values
          }
          need = inner >= kInfiniteNeed || node.min_items > node.max_items ? kInfiniteNeed : inner + 1;
          break;
        }
        case NodeKind::kUnion:
          for (uint32_t child : node.children) need = std::min(need, of(child));
          break;
        case NodeKind::kSeq:
          need = 0;
          for (uint32_t child : node.children) need = std::max(need, of(child));
          break;
        case NodeKind::kCallList:
          need = of(node.children[0]);
          break;
      }
      if (need < node.need) {
        node.need = need;
        changed = true;
      }
    }
  }
}

}  // namespace k3::chat::grammar
