// Symbol-at-a-time matching of a Grammar with lazily popped frames and forking for alternatives.
#include "src/chat/grammar_matcher.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "src/chat/grammar_marker_filter.h"

namespace k3::chat::grammar {
namespace {

constexpr int kMaxLevel = 192;      // recursion guard (pops / pushes / union forks within one symbol)
constexpr size_t kMaxThreads = 64;  // extra threads are dropped (every kept one is still completable)

// UTF-8 sub-states shared by strings and free text: 1 = at a character boundary, 20..26 = inside one.
uint32_t Utf8Lead(uint8_t c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 20;
  if (c == 0xE0) return 22;
  if (c == 0xED) return 23;
  if (c >= 0xE1 && c <= 0xEF) return 21;
  if (c == 0xF0) return 25;
  if (c >= 0xF1 && c <= 0xF3) return 24;
  if (c == 0xF4) return 26;
  return 0;
}
uint32_t Utf8Continue(uint32_t state, uint8_t c) {
  switch (state) {
    case 20:
      return c >= 0x80 && c <= 0xBF ? 1 : 0;
    case 21:
      return c >= 0x80 && c <= 0xBF ? 20 : 0;
    case 22:
      return c >= 0xA0 && c <= 0xBF ? 20 : 0;
    case 23:
      return c >= 0x80 && c <= 0x9F ? 20 : 0;
    case 24:
      return c >= 0x80 && c <= 0xBF ? 21 : 0;
    case 25:
      return c >= 0x90 && c <= 0xBF ? 21 : 0;
    case 26:
      return c >= 0x80 && c <= 0x8F ? 21 : 0;
    default:
      return 0;
  }
}
bool IsHex(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsDigit(int c) { return c >= '0' && c <= '9'; }

// kRegex / kRegexRaw strings: pos 0 before the opening quote (kRegexRaw: before the first byte, DFA at
// its start), 1 inside with the DFA state in f.b, kStringDone after the closing quote (kRegex only). The
// DFA already excludes marker names and bytes a JSON string cannot hold raw, and has no dead ends.
bool RegexStringStep(const Node& node, Frame& f, int symbol) {
  if (symbol > 255) return false;
  const auto c = static_cast<uint8_t>(symbol);
  const regex::ByteDfa& dfa = *node.dfa;
  if (f.pos == 0) {
    f.b = static_cast<uint32_t>(dfa.start);
    if (node.string_mode == StringMode::kRegex) {
      if (c != '"') return false;
      f.pos = 1;
      return true;
    }
    f.pos = 1;
  }
  if (f.pos != 1) return false;
  const auto state = static_cast<int32_t>(f.b);
  if (node.string_mode == StringMode::kRegex && c == '"') {
    if (!dfa.accepting[state]) return false;
    f.pos = kStringDone;
    return true;
  }
  const int32_t next = dfa.next[state][c];
  if (next == regex::ByteDfa::kDead) return false;
  f.b = static_cast<uint32_t>(next);
  return true;
}

// String sub-states: 0 before the opening quote, 1 content, 2 after '\', 3..6 \u hex digits (3: first),
// 7 after \uD, 8..9 rest of a high surrogate, 10..15 the \uDC00-\uDFFF that must follow, 20..26 UTF-8.
bool StringStep(const Node& node, Frame& f, int symbol) {
  if (node.string_mode == StringMode::kRegex || node.string_mode == StringMode::kRegexRaw) {
    return RegexStringStep(node, f, symbol);
  }
  if (symbol > 255) return false;
  const auto c = static_cast<uint8_t>(symbol);
  const StringMode mode = node.string_mode;
  uint32_t pos = f.pos;
  if (mode == StringMode::kAttr && pos == 0) pos = 1;
  if (mode != StringMode::kAttr) {
    const uint8_t filter = FilterNext(static_cast<uint8_t>(f.a), c);
    if (filter == kFilterReject) return false;
    f.a = filter;
  }
  uint32_t next = 0;
  bool content_byte = false;
  switch (pos) {
    case 0:
      next = c == '"' ? 1 : 0;
      break;
    case 1:
      if (c == '"') {
        if (mode != StringMode::kJson && f.b != SymbolTrie::kNone && node.excluded.nodes[f.b].terminal) {
          return false;  // equals a declared property name
        }
        next = kStringDone;
      } else if (c == '\\' && mode == StringMode::kJson) {
        next = 2;
      } else if (c == '\\' && mode == StringMode::kJsonKey) {
        next = 0;  // keys are written without escapes, so equality with declared names is byte equality
      } else if (c < 0x20 || (mode == StringMode::kAttr && (c == '&' || c == '<'))) {
        next = 0;
      } else {
        next = Utf8Lead(c);
        content_byte = true;
      }
      break;
    case 2:
      if (c == 'u') {
        next = 3;
      } else {
        for (char e : std::string_view("\"\\/bfnrt")) next = static_cast<uint8_t>(e) == c ? 1 : next;
      }
      break;
    case 3:
      next = (c == 'D' || c == 'd') ? 7 : (IsHex(c) ? 4 : 0);
      break;
    case 4:
      next = IsHex(c) ? 5 : 0;
      break;
    case 5:
      next = IsHex(c) ? 6 : 0;
      break;
    case 6:
      next = IsHex(c) ? 1 : 0;
      break;
    case 7:  // \uD?: 0-7 ordinary, 8-B high surrogate, C-F a lone low surrogate (invalid)
      if (c >= '0' && c <= '7') next = 5;
      if (c == '8' || c == '9' || c == 'a' || c == 'b' || c == 'A' || c == 'B') next = 8;
      break;
    case 8:
      next = IsHex(c) ? 9 : 0;
      break;
    case 9:
      next = IsHex(c) ? 10 : 0;
      break;
    case 10:
      next = c == '\\' ? 11 : 0;
      break;
    case 11:
      next = c == 'u' ? 12 : 0;
      break;
    case 12:
      next = (c == 'D' || c == 'd') ? 13 : 0;
      break;
    case 13:
      next = ((c >= 'c' && c <= 'f') || (c >= 'C' && c <= 'F')) ? 14 : 0;
      break;
    case 14:
      next = IsHex(c) ? 15 : 0;
      break;
    case 15:
      next = IsHex(c) ? 1 : 0;
      break;
    default:
      next = Utf8Continue(pos, c);
      content_byte = true;
      break;
  }
  if (next == 0) return false;
  if (content_byte && mode != StringMode::kJson && f.b != SymbolTrie::kNone)
    f.b = node.excluded.Child(f.b, c);
  f.pos = next;
  return true;
}

bool RawTextStep(Frame& f, int symbol) {
  if (symbol > 255) return false;
  const auto c = static_cast<uint8_t>(symbol);
  const uint8_t filter = FilterNext(static_cast<uint8_t>(f.a), c);
  if (filter == kFilterReject) return false;
  const uint32_t pos = f.pos == 0 ? 1 : f.pos;
  const uint32_t next = pos == 1 ? Utf8Lead(c) : Utf8Continue(pos, c);
  if (next == 0) return false;
  f.a = filter;
  f.pos = next;
  return true;
}

// Number states: 0 start, 1 after '-', 2 after a leading 0, 3 integer digits, 4 after '.', 5 fraction
// digits, 6 after e/E, 7 after the exponent sign, 8 exponent digits. a counts digits of the current part.
// A bounded number (Node::dfa, number_schema.h) instead runs its DFA: pos 0 before the first byte, 1 after
// it with the DFA state in b.
bool NumberStep(const Node& node, Frame& f, int symbol) {
  if (node.dfa != nullptr) {
    if (symbol > 255) return false;
    const int32_t next = node.dfa->Step(f.pos == 0 ? node.dfa->start : static_cast<int32_t>(f.b),
                                        static_cast<uint8_t>(symbol));
    if (next == regex::ByteDfa::kDead) return false;
    f.pos = 1;
    f.b = static_cast<uint32_t>(next);
    return true;
  }
  const bool digit = IsDigit(symbol);
  const bool fraction_ok = !node.integer;
  switch (f.pos) {
    case 0:
    case 1:
      if (f.pos == 0 && symbol == '-') {
        f.pos = 1;
        return true;
      }
      if (!digit) return false;
      f.pos = symbol == '0' ? 2 : 3;
      f.a = 1;
      return true;
    case 2:
    case 3:
    case 5:
      if (digit && f.pos != 2) {
        if (f.a >= (f.pos == 3 ? kMaxIntegerDigits : kMaxFractionDigits)) return false;
        ++f.a;
        return true;
      }
      if (symbol == '.' && f.pos != 5 && fraction_ok) {
        f.pos = 4;
        return true;
      }
      if ((symbol == 'e' || symbol == 'E') && fraction_ok) {
        f.pos = 6;
        return true;
      }
      return false;
    case 4:
      if (!digit) return false;
      f.pos = 5;
      f.a = 1;
      return true;
    case 6:
    case 7:
      if (f.pos == 6 && (symbol == '+' || symbol == '-')) {
        f.pos = 7;
        return true;
      }
      if (!digit) return false;
      f.pos = 8;
      f.a = 1;
      return true;
    case 8:
      if (!digit || f.a >= kMaxExponentDigits) return false;
      ++f.a;
      return true;
    default:
      return false;
  }
}

// First member index that may start now (object in phase 1 or 3, or args mode in phase 0).
uint32_t FirstCandidate(const Node& node, const Frame& f) {
  const auto n = static_cast<uint32_t>(node.members.size());
  if (f.pos == kObjOpen) return 0;
  if (f.pos == kObjAfter) return f.a >= n ? n : f.a + 1;
  return f.a;
}

// Whether member j of an object (j == members.size(): an additional one) may start after `count`
// members: the required members after it still fit maxProperties and minProperties stays reachable
// with the satisfiable members after it (additional ones are unlimited), so no object dead-ends.
bool MemberMayStart(const Grammar& grammar, const Node& node, uint32_t j, uint32_t count) {
  if (node.min_properties == 0 && node.max_properties == std::numeric_limits<uint32_t>::max()) return true;
  const uint64_t with_it = uint64_t{count} + 1;
  if (with_it > node.max_properties) return false;
  uint64_t required_after = 0;
  uint64_t available_after = 0;
  for (size_t k = j + 1; k < node.members.size(); ++k) {
    if (node.members[k].required) ++required_after;
    if (grammar.nodes[node.members[k].node].need < kInfiniteNeed) ++available_after;
  }
  if (with_it + required_after > node.max_properties) return false;
  const bool extras =
      node.extra_member >= 0 && grammar.nodes[static_cast<size_t>(node.extra_member)].need < kInfiniteNeed;
  return extras || with_it + available_after >= node.min_properties;
}

}  // namespace

bool StepLeaf(const Node& node, Frame& frame, int symbol) {
  return node.kind == NodeKind::kRawText ? RawTextStep(frame, symbol) : StringStep(node, frame, symbol);
}

bool Matcher::SingleLeaf(const MatchState& state, Frame* leaf) const {
  if (state.num_threads() != 1) return false;
  const Frame& top = state.frames.back();
  const Node& node = grammar_->nodes[top.node];
  const bool inside =
      node.kind == NodeKind::kRawText ||
      (node.kind == NodeKind::kString && top.pos != kStringDone && node.string_mode != StringMode::kRegex &&
       node.string_mode != StringMode::kRegexRaw && (top.pos != 0 || node.string_mode == StringMode::kAttr));
  if (inside) *leaf = top;
  return inside;
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  scratch_.resize(kMaxLevel + 2);
}

MatchState Matcher::Initial() const {
  MatchState state;
  state.frames.push_back(Frame{grammar_->root, 0, 0, 0, grammar_->IsContainer(grammar_->root) ? 1u : 0u});
  state.ends.push_back(1);
  Settle(state);
  return state;
}

void Matcher::Settle(MatchState& state) const {
  MatchState settled;
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    Thread t(state.frames.begin() + begin, state.frames.begin() + end);
    begin = end;
    for (bool changed = true; changed;) {
      changed = false;
      const Frame& top = t.back();
      const Node& node = grammar_->nodes[top.node];
      if (t.size() >= 2 && node.kind == NodeKind::kLiteralSet && node.literals.nodes[top.pos].terminal &&
          node.literals.nodes[top.pos].children.empty()) {
        const Frame literal = t.back();
        t.pop_back();
        ChildDone(t.back(), &literal);
        changed = true;
      } else if (node.kind == NodeKind::kSeq && top.pos % 2 == 0 && top.pos / 2 < node.children.size() &&
                 grammar_->nodes[node.children[top.pos / 2]].kind == NodeKind::kRawText) {
        const uint32_t child = node.children[top.pos / 2];
        t.back().pos = top.pos + 1;
        t.push_back(Frame{child, 0, 0, 0, t.back().depth});
        changed = true;
      }
    }
    settled.frames.insert(settled.frames.end(), t.begin(), t.end());
    settled.ends.push_back(static_cast<uint32_t>(settled.frames.size()));
  }
  state = std::move(settled);
}

Matcher::Thread& Matcher::Scratch(int level) { return scratch_[static_cast<size_t>(level)]; }

void Matcher::Emit(const Thread& thread, MatchState& out) {
  out.frames.insert(out.frames.end(), thread.begin(), thread.end());
  out.ends.push_back(static_cast<uint32_t>(out.frames.size()));
}

void Matcher::ChildDone(Frame& parent, const Frame* child) const {
  const Node& node = grammar_->nodes[parent.node];
  if (node.kind == NodeKind::kArray && node.unique_literals && child != nullptr) {
    const int32_t index = grammar_->nodes[child->node].literal_index[child->pos];
    if (index >= 0) parent.count |= uint32_t{1} << index;
  }
  switch (node.kind) {
    case NodeKind::kObject:
      parent.pos = kObjAfter;
      ++parent.count;
      break;
    case NodeKind::kArray:
      parent.pos = kArrAfter;
      ++parent.a;
      break;
    case NodeKind::kSeq:
      ++parent.pos;
      break;
    case NodeKind::kCallList:
      parent.pos = 0;
      ++parent.a;
      break;
    default:
      break;
  }
}

uint32_t Matcher::UnusedBelow(const Frame* frames, size_t size, uint32_t trie_node) const {
  const Node& literal = grammar_->nodes[frames[size - 1].node];
  if (literal.literal_index.empty() || size < 2) return ~uint32_t{0};
  const Frame& parent = frames[size - 2];
  const Node& array = grammar_->nodes[parent.node];
  if (array.kind != NodeKind::kArray || !array.unique_literals || array.items != frames[size - 1].node) {
    return ~uint32_t{0};
  }
  return literal.literal_below[trie_node] & ~parent.count;
}

bool Matcher::Accepting(const Frame* frames, size_t size, int guard) const {
  const Frame& f = frames[size - 1];
  const Node& node = grammar_->nodes[f.node];
  switch (node.kind) {
    case NodeKind::kNever:
      return false;
    case NodeKind::kLiteralSet:
      if (!node.literals.nodes[f.pos].terminal) return false;
      return node.literal_index.empty() ||
             (UnusedBelow(frames, size, f.pos) & uint32_t{1} << node.literal_index[f.pos]) != 0;
    case NodeKind::kString:
      if (node.string_mode == StringMode::kRegexRaw) {
        return node.dfa->accepting[f.pos == 0 ? node.dfa->start : static_cast<int32_t>(f.b)] != 0;
      }
      return f.pos == kStringDone;
    case NodeKind::kRawText:
      return f.pos <= 1;
    case NodeKind::kNumber:
      if (node.dfa != nullptr) return f.pos == 1 && node.dfa->accepting[f.b] != 0;
      return f.pos == 2 || f.pos == 3 || f.pos == 5 || f.pos == 8;
    case NodeKind::kObject:
      if (!node.args_mode) return f.pos == kObjDone;
      return f.pos != kObjIn && node.next_required[FirstCandidate(node, f)] == node.members.size() &&
             f.count >= node.min_properties;
    case NodeKind::kArray:
      return f.pos == kArrDone;
    case NodeKind::kUnion:
      if (guard > kMaxLevel) return false;
      for (uint32_t alt : node.children) {
        const Frame initial{alt, 0, 0, 0, f.depth};
        if (Accepting(&initial, 1, guard + 1)) return true;
      }
      return false;
    case NodeKind::kSeq:
      return f.pos == 2 * node.children.size();
    case NodeKind::kCallList:
      return f.pos == 0 && f.a >= 1;
    case NodeKind::kCallIndex:
      return f.pos > 0 && f.pos == std::to_string(f.a).size();
  }
  return false;
}

void Matcher::PopAndStep(const Frame* frames, size_t size, int symbol, int level, MatchState& out) {
  if (size <= 1 || level >= kMaxLevel) return;  // the whole output is complete: nothing may follow
  Thread& t = Scratch(level);
  t.assign(frames, frames + size - 1);
  ChildDone(t.back(), &frames[size - 1]);
  Step(t.data(), t.size(), symbol, level + 1, out);
}

void Matcher::PushAndStep(const Frame* frames, size_t size, uint32_t node, int symbol, int level,
                          MatchState& out) {
  // frames[size - 1] is the (already updated) parent.
  const uint32_t depth = frames[size - 1].depth;
  if (static_cast<int64_t>(depth) + grammar_->nodes[node].need > kMaxNesting) return;
  Thread& t = Scratch(level);
  t.assign(frames, frames + size);
  t.push_back(Frame{node, 0, 0, 0, depth + (grammar_->IsContainer(node) ? 1u : 0u)});
  Step(t.data(), t.size(), symbol, level + 1, out);
}

void Matcher::Step(const Frame* frames, size_t size, int symbol, int level, MatchState& out) {
  if (size == 0 || level >= kMaxLevel) return;
  const Frame& top = frames[size - 1];
  const Node& node = grammar_->nodes[top.node];
  const auto copy = [&]() -> Frame& {
    Thread& t = Scratch(level);
    t.assign(frames, frames + size);
    return t.back();
  };
  // Re-parents: the top frame replaced by `updated`, then `child` pushed and stepped.
  const auto push_child = [&](const Frame& updated, uint32_t child) {
    Thread& t = Scratch(level);
    t.assign(frames, frames + size);
    t.back() = updated;
    // PushAndStep copies t into Scratch(level) again: use the next level's buffer for the copy.
    PushAndStep(t.data(), t.size(), child, symbol, level + 1, out);
  };
  switch (node.kind) {
    case NodeKind::kNever:
      return;
    case NodeKind::kUnion: {
      const uint32_t parent_depth = size >= 2 ? frames[size - 2].depth : 0;
      for (uint32_t alt : node.children) {
        if (static_cast<int64_t>(parent_depth) + grammar_->nodes[alt].need > kMaxNesting) continue;
        Thread& t = Scratch(level);
        t.assign(frames, frames + size);
        t.back() = Frame{alt, 0, 0, 0, parent_depth + (grammar_->IsContainer(alt) ? 1u : 0u)};
        Step(t.data(), t.size(), symbol, level + 1, out);
      }
      return;
    }
    case NodeKind::kLiteralSet: {
      const uint32_t child = node.literals.Child(top.pos, symbol);
      if (child != SymbolTrie::kNone && UnusedBelow(frames, size, child) != 0) {
        copy().pos = child;
        Emit(Scratch(level), out);
      }
      break;
    }
    case NodeKind::kString: {
      Frame& f = copy();
      if (StringStep(node, f, symbol)) Emit(Scratch(level), out);
      break;
    }
    case NodeKind::kRawText: {
      Frame& f = copy();
      if (RawTextStep(f, symbol)) Emit(Scratch(level), out);
      break;
    }
    case NodeKind::kNumber: {
      Frame& f = copy();
      if (NumberStep(node, f, symbol)) Emit(Scratch(level), out);
      break;
    }
    case NodeKind::kObject: {
      const auto n = static_cast<uint32_t>(node.members.size());
      const bool members_may_start =
          top.pos == kObjMembers || (node.args_mode && (top.pos == kObjOpen || top.pos == kObjAfter));
      if (!node.args_mode && top.pos == kObjOpen && symbol == '{') {
        Frame& f = copy();
        f.pos = kObjMembers;
        f.a = 0;
        f.b = 0;
        Emit(Scratch(level), out);
      } else if (members_may_start) {
        const uint32_t first = FirstCandidate(node, top);
        if (!node.args_mode && symbol == '}' && top.b == 0 && node.next_required[first] == n &&
            top.count >= node.min_properties) {
          Frame& f = copy();
          f.pos = kObjDone;
          Emit(Scratch(level), out);
        }
        uint32_t j = first;
        for (; j < n; ++j) {
          Frame updated = top;
          updated.pos = kObjIn;
          updated.a = j;
          if (MemberMayStart(*grammar_, node, j, top.count)) push_child(updated, node.members[j].node);
          if (node.members[j].required) break;
        }
        if (j >= n && node.extra_member >= 0 && MemberMayStart(*grammar_, node, n, top.count)) {
          Frame updated = top;
          updated.pos = kObjIn;
          updated.a = n;
          push_child(updated, static_cast<uint32_t>(node.extra_member));
        }
      } else if (!node.args_mode && top.pos == kObjAfter) {
        const uint32_t next = FirstCandidate(node, top);
        if (symbol == '}' && node.next_required[next] == n && top.count >= node.min_properties) {
          Frame& f = copy();
          f.pos = kObjDone;
          Emit(Scratch(level), out);
        } else if (symbol == ',') {
          // Only when some member can still follow within the nesting limit.
          bool possible = false;
          for (uint32_t j = next; j <= n && !possible; ++j) {
            const int64_t member = j < n ? static_cast<int64_t>(node.members[j].node) : node.extra_member;
            if (member >= 0 &&
                static_cast<int64_t>(top.depth) + grammar_->nodes[static_cast<size_t>(member)].need <=
                    kMaxNesting &&
                MemberMayStart(*grammar_, node, j, top.count)) {
              possible = true;
            }
            if (j < n && node.members[j].required) break;  // members after it cannot come first
          }
          if (possible) {
            Frame& f = copy();
            f.pos = kObjMembers;
            f.a = next;
            f.b = 1;
            Emit(Scratch(level), out);
          }
        }
      }
      break;
    }
    case NodeKind::kArray: {
      const bool item_fits =
          static_cast<int64_t>(top.depth) + grammar_->nodes[node.Item(top.a)].need <= kMaxNesting;
      if (top.pos == kArrOpen && symbol == '[') {
        copy().pos = kArrFirst;
        Emit(Scratch(level), out);
      } else if (top.pos == kArrFirst || top.pos == kArrNext) {
        if (top.pos == kArrFirst && symbol == ']' && node.min_items == 0) {
          copy().pos = kArrDone;
          Emit(Scratch(level), out);
        }
        if (top.a < node.max_items) {
          Frame updated = top;
          updated.pos = kArrIn;
          push_child(updated, node.Item(top.a));
        }
      } else if (top.pos == kArrAfter) {
        if (symbol == ']' && top.a >= node.min_items) {
          copy().pos = kArrDone;
          Emit(Scratch(level), out);
        } else if (symbol == ',' && top.a < node.max_items && item_fits &&
                   (!node.unique_literals ||
                    std::popcount(top.count) < std::popcount(grammar_->nodes[node.items].literal_below[0]))) {
          copy().pos = kArrNext;
          Emit(Scratch(level), out);
        }
      }
      break;
    }
    case NodeKind::kSeq:
      if (top.pos % 2 == 0 && top.pos / 2 < node.children.size()) {
        Frame updated = top;
        updated.pos = top.pos + 1;
        push_child(updated, node.children[top.pos / 2]);
      }
      break;
    case NodeKind::kCallList:
      if (top.pos == 0 && top.a < node.max_calls) {
        Frame updated = top;
        updated.pos = 1;
        push_child(updated, node.children[0]);
      }
      break;
    case NodeKind::kCallIndex: {
      uint32_t index = top.a;
      if (top.pos == 0) {
        index = 1;
        for (size_t i = size; i-- > 0;) {
          if (grammar_->nodes[frames[i].node].kind == NodeKind::kCallList) {
            index = frames[i].a + 1;
            break;
          }
        }
      }
      const std::string text = std::to_string(index);
      if (top.pos < text.size() && symbol == static_cast<uint8_t>(text[top.pos])) {
        Frame& f = copy();
        f.pos = top.pos + 1;
        f.a = index;
        Emit(Scratch(level), out);
      }
      break;
    }
  }
  if (Accepting(frames, size, 0)) PopAndStep(frames, size, symbol, level, out);
}

bool Matcher::Advance(const MatchState& in, int symbol, MatchState& out) {
  out.Clear();
  uint32_t begin = 0;
  for (uint32_t end : in.ends) {
    Step(in.frames.data() + begin, end - begin, symbol, 0, out);
    begin = end;
  }
  if (out.ends.size() > 1) {
    // Drop duplicate threads (and any beyond kMaxThreads).
    MatchState unique;
    uint32_t b = 0;
    for (uint32_t e : out.ends) {
      bool seen = false;
      uint32_t ub = 0;
      for (uint32_t ue : unique.ends) {
        if (ue - ub == e - b &&
            std::equal(out.frames.begin() + b, out.frames.begin() + e, unique.frames.begin() + ub)) {
          seen = true;
          break;
        }
        ub = ue;
      }
      if (!seen && unique.ends.size() < kMaxThreads) {
        unique.frames.insert(unique.frames.end(), out.frames.begin() + b, out.frames.begin() + e);
        unique.ends.push_back(static_cast<uint32_t>(unique.frames.size()));
      }
      b = e;
    }
    if (unique.ends.size() != out.ends.size()) out = std::move(unique);
  }
  return !out.ends.empty();
}

bool Matcher::IsComplete(const MatchState& state) const {
  uint32_t begin = 0;
  for (uint32_t end : state.ends) {
    Thread t(state.frames.begin() + begin, state.frames.begin() + end);
    begin = end;
    while (!t.empty() && Accepting(t.data(), t.size(), 0)) {
      const Frame child = t.back();
      t.pop_back();
      if (!t.empty()) ChildDone(t.back(), &child);
    }
    if (t.empty()) return true;
  }
  return false;
}

}  // namespace k3::chat::grammar
