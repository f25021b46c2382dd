// Regex syntax tree -> byte NFA -> DFA (see regex_dfa.h).
#include "src/chat/regex_dfa.h"

#include <algorithm>
#include <deque>
#include <map>

#include "src/chat/regex_parse.h"

namespace k3::chat::regex {

// Cuts transitions into states that cannot reach acceptance and fills min_to_accept.
void PruneAndMeasure(ByteDfa& dfa);

namespace {

struct ByteEdge {
  uint8_t lo = 0;
  uint8_t hi = 0;
  int32_t to = 0;
};

struct NfaState {
  std::vector<int32_t> epsilon;
  std::vector<ByteEdge> edges;
};

// A Thompson NFA under construction; fragments are (start, end) state pairs with end having no edges yet.
class NfaBuilder {
 public:
  explicit NfaBuilder(std::string_view pattern) : pattern_(pattern) {}

  std::vector<NfaState> states;

  Result<int32_t> NewState() {
    if (states.size() >= kMaxNfaStates) {
      return InvalidArgument("regex /{}/: more than {} NFA states (repeat counts too large)", pattern_,
                             kMaxNfaStates);
    }
    states.emplace_back();
    return static_cast<int32_t>(states.size() - 1);
  }

  // Adds paths from `from` to `to` for every code point of the node.
  Status Build(const RegexNode& node, int32_t from, int32_t to) {
    switch (node.kind) {
      case RegexKind::kEmpty:
        states[from].epsilon.push_back(to);
        return OkStatus();
      case RegexKind::kClass:
        for (const CodeRange& r : node.ranges) K3_RETURN_IF_ERROR(AddCodeRange(from, to, r.lo, r.hi));
        return OkStatus();
      case RegexKind::kConcat: {
        int32_t at = from;
        for (size_t k = 0; k < node.children.size(); ++k) {
          int32_t next = to;
          if (k + 1 < node.children.size()) {
            K3_ASSIGN_OR_RETURN(next, NewState());
          }
          K3_RETURN_IF_ERROR(Build(node.children[k], at, next));
          at = next;
        }
        return OkStatus();
      }
      case RegexKind::kAlternate:
        for (const RegexNode& child : node.children) K3_RETURN_IF_ERROR(Build(child, from, to));
        return OkStatus();
      case RegexKind::kRepeat:
        return BuildRepeat(node.children[0], node.min, node.max, from, to);
    }
    return OkStatus();
  }

  // Any text (every UTF-8 character, newlines included) looping on `state`.
  Status AnyTextLoop(int32_t state) { return AddCodeRangeSet(state, state, ComplementRanges({})); }

 private:
  Status BuildRepeat(const RegexNode& child, uint32_t min, uint32_t max, int32_t from, int32_t to) {
    int32_t at = from;
    for (uint32_t k = 0; k < min; ++k) {
      K3_ASSIGN_OR_RETURN(int32_t next, NewState());
      K3_RETURN_IF_ERROR(Build(child, at, next));
      at = next;
    }
    if (max == kUnboundedRepeat) {
      // at -> loop -(child)-> loop; loop -> to
      K3_ASSIGN_OR_RETURN(int32_t loop, NewState());
      K3_ASSIGN_OR_RETURN(int32_t body_end, NewState());
      states[at].epsilon.push_back(loop);
      K3_RETURN_IF_ERROR(Build(child, loop, body_end));
      states[body_end].epsilon.push_back(loop);
      states[loop].epsilon.push_back(to);
      return OkStatus();
    }
    for (uint32_t k = min; k < max; ++k) {  // optional copies, each may stop early
      states[at].epsilon.push_back(to);
      K3_ASSIGN_OR_RETURN(int32_t next, NewState());
      K3_RETURN_IF_ERROR(Build(child, at, next));
      at = next;
    }
    states[at].epsilon.push_back(to);
    return OkStatus();
  }

  Status AddCodeRangeSet(int32_t from, int32_t to, const std::vector<CodeRange>& ranges) {
    for (const CodeRange& r : ranges) K3_RETURN_IF_ERROR(AddCodeRange(from, to, r.lo, r.hi));
    return OkStatus();
  }

  static int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

  static void Encode(uint32_t cp, int len, uint8_t* out) {
    if (len == 1) {
      out[0] = static_cast<uint8_t>(cp);
      return;
    }
    static constexpr uint8_t kLeadMark[] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (int k = len - 1; k > 0; --k) {
      out[k] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      cp >>= 6;
    }
    out[0] = static_cast<uint8_t>(kLeadMark[len] | cp);
  }

  // Code points lo..hi (no surrogates) as byte-range chains from `from` to `to`: the range is first cut
  // where the encoded length changes, then where a continuation byte would not span its full 80..BF,
  // until each piece is a product of per-byte ranges.
  Status AddCodeRange(int32_t from, int32_t to, uint32_t lo, uint32_t hi) {
    static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
    for (uint32_t end : kLengthEnds) {
      const uint32_t start = end == 0x7F ? 0 : (end == 0x7FF ? 0x80 : (end == 0xFFFF ? 0x800 : 0x10000));
      const uint32_t a = std::max(lo, start), b = std::min(hi, end);
      if (a <= b) K3_RETURN_IF_ERROR(AddSameLength(from, to, a, b));
    }
    return OkStatus();
  }

  Status AddSameLength(int32_t from, int32_t to, uint32_t lo, uint32_t hi) {
    const int len = EncodedLength(lo);
    for (int k = 1; k < len; ++k) {
      const uint32_t mask = (1u << (6 * k)) - 1;
      if ((lo & ~mask) != (hi & ~mask)) {
        if ((lo & mask) != 0) {
          K3_RETURN_IF_ERROR(AddSameLength(from, to, lo, lo | mask));
          return AddSameLength(from, to, (lo | mask) + 1, hi);
        }
        if ((hi & mask) != mask) {
          K3_RETURN_IF_ERROR(AddSameLength(from, to, lo, (hi & ~mask) - 1));
          return AddSameLength(from, to, hi & ~mask, hi);
        }
      }
    }
    uint8_t a[4], b[4];
    Encode(lo, len, a);
    Encode(hi, len, b);
    int32_t at = from;
    for (int k = 0; k < len; ++k) {
      int32_t next = to;
      if (k + 1 < len) {
        K3_ASSIGN_OR_RETURN(next, NewState());
      }
      states[at].edges.push_back({a[k], b[k], next});
      at = next;
    }
    return OkStatus();
  }

  std::string_view pattern_;
};

void EpsilonClosure(const std::vector<NfaState>& nfa, std::vector<int32_t>& set, std::vector<uint8_t>& seen) {
  for (int32_t s : set) seen[s] = 1;
  for (size_t k = 0; k < set.size(); ++k) {
    for (int32_t t : nfa[set[k]].epsilon) {
      if (!seen[t]) {
        seen[t] = 1;
        set.push_back(t);
      }
    }
  }
  for (int32_t s : set) seen[s] = 0;
  std::sort(set.begin(), set.end());
}

bool JsonUnsafe(int byte) { return byte < 0x20 || byte == '"' || byte == '\\'; }

}  // namespace

bool ByteDfa::Matches(std::string_view text) const {
  int32_t state = start;
  for (char c : text) {
    state = Step(state, static_cast<uint8_t>(c));
    if (state == kDead) return false;
  }
  return state != kDead && accepting[state];
}

Result<ByteDfa> CompileRegex(std::string_view pattern, const RegexOptions& options) {
  K3_ASSIGN_OR_RETURN(ParsedRegex parsed, ParseRegex(pattern));
  NfaBuilder nfa(pattern);
  K3_ASSIGN_OR_RETURN(const int32_t nfa_start, nfa.NewState());
  K3_ASSIGN_OR_RETURN(const int32_t nfa_accept, nfa.NewState());
  for (const RegexBranch& branch : parsed.branches) {
    K3_ASSIGN_OR_RETURN(int32_t body_start, nfa.NewState());
    K3_ASSIGN_OR_RETURN(int32_t body_end, nfa.NewState());
    nfa.states[nfa_start].epsilon.push_back(body_start);
    K3_RETURN_IF_ERROR(nfa.Build(branch.body, body_start, body_end));
    if (!options.full_match && !branch.anchored_start) K3_RETURN_IF_ERROR(nfa.AnyTextLoop(body_start));
    if (!options.full_match && !branch.anchored_end) K3_RETURN_IF_ERROR(nfa.AnyTextLoop(body_end));
    nfa.states[body_end].epsilon.push_back(nfa_accept);
  }
  // A prefix loop on body_start would also be reachable after the body when body_start == a loop state of
  // the body; Build never adds edges into its `from` state, so the loop only runs before the body.

  // Subset construction.
  ByteDfa dfa;
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> sets;
  std::vector<uint8_t> seen(nfa.states.size(), 0);
  auto intern = [&](std::vector<int32_t> set) -> Result<int32_t> {
    auto it = ids.find(set);
    if (it != ids.end()) return it->second;
    if (sets.size() >= options.max_dfa_states) {
      return InvalidArgument("regex /{}/: the automaton needs more than {} states", pattern,
                             options.max_dfa_states);
    }
    const auto id = static_cast<int32_t>(sets.size());
    ids.emplace(set, id);
    dfa.accepting.push_back(std::binary_search(set.begin(), set.end(), nfa_accept) ? 1 : 0);
    sets.push_back(std::move(set));
    return id;
  };
  std::vector<int32_t> initial = {nfa_start};
  EpsilonClosure(nfa.states, initial, seen);
  K3_ASSIGN_OR_RETURN(dfa.start, intern(std::move(initial)));
  std::array<std::vector<int32_t>, 256> moves;
  for (size_t d = 0; d < sets.size(); ++d) {
    for (auto& m : moves) m.clear();
    for (int32_t s : sets[d]) {
      for (const ByteEdge& e : nfa.states[s].edges) {
        for (int b = e.lo; b <= e.hi; ++b) moves[b].push_back(e.to);
      }
    }
    std::array<int32_t, 256> row;
    row.fill(ByteDfa::kDead);
    for (int b = 0; b < 256; ++b) {
      if (moves[b].empty() || (options.json_string_safe && JsonUnsafe(b))) continue;
      std::vector<int32_t> target = moves[b];
      std::sort(target.begin(), target.end());
      target.erase(std::unique(target.begin(), target.end()), target.end());
      EpsilonClosure(nfa.states, target, seen);
      target.erase(std::unique(target.begin(), target.end()), target.end());
      K3_ASSIGN_OR_RETURN(row[b], intern(std::move(target)));
    }
    dfa.next.push_back(row);
  }

  PruneAndMeasure(dfa);
  return dfa;
}

Result<ByteDfa> Intersect(const ByteDfa& dfa, const ByteFilter& filter, uint32_t max_states,
                          std::string_view what) {
  ByteDfa out;
  if (dfa.Empty() || filter.start < 0) return out;  // either language is empty
  std::map<std::pair<int32_t, int32_t>, int32_t> ids;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  auto intern = [&](std::pair<int32_t, int32_t> key) -> Result<int32_t> {
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    if (pairs.size() >= max_states) {
      return InvalidArgument("{}: the string automaton needs more than {} states", what, max_states);
    }
    const auto id = static_cast<int32_t>(pairs.size());
    ids.emplace(key, id);
    out.accepting.push_back(dfa.accepting[key.first] && filter.accepting(key.second) ? 1 : 0);
    pairs.push_back(key);
    return id;
  };
  K3_ASSIGN_OR_RETURN(out.start, intern({dfa.start, filter.start}));
  for (size_t p = 0; p < pairs.size(); ++p) {
    std::array<int32_t, 256> row;
    row.fill(ByteDfa::kDead);
    const auto [a, f] = pairs[p];
    for (int b = 0; b < 256; ++b) {
      const int32_t next_a = dfa.next[a][b];
      if (next_a == ByteDfa::kDead) continue;
      const int32_t next_f = filter.next(f, static_cast<uint8_t>(b));
      if (next_f < 0) continue;
      K3_ASSIGN_OR_RETURN(row[b], intern({next_a, next_f}));
    }
    out.next.push_back(row);
  }
  PruneAndMeasure(out);
  return out;
}

ByteFilter AsFilter(const ByteDfa& dfa) {
  ByteFilter filter;
  filter.start = dfa.start;
  filter.next = [&dfa](int32_t s, uint8_t b) { return dfa.next[s][b]; };
  filter.accepting = [&dfa](int32_t s) { return dfa.accepting[s] != 0; };
  return filter;
}

void PruneAndMeasure(ByteDfa& dfa) {
  // Fewest bytes to acceptance (reverse BFS); transitions into states that cannot accept are cut.
  const size_t n = dfa.next.size();
  std::vector<std::vector<int32_t>> reverse(n);
  for (size_t s = 0; s < n; ++s) {
    for (int b = 0; b < 256; ++b) {
      const int32_t t = dfa.next[s][b];
      if (t != ByteDfa::kDead && (reverse[t].empty() || reverse[t].back() != static_cast<int32_t>(s))) {
        reverse[t].push_back(static_cast<int32_t>(s));
      }
    }
  }
  dfa.min_to_accept.assign(n, ByteDfa::kNoAccept);
  std::deque<int32_t> queue;
  for (size_t s = 0; s < n; ++s) {
    if (dfa.accepting[s]) {
      dfa.min_to_accept[s] = 0;
      queue.push_back(static_cast<int32_t>(s));
    }
  }
  while (!queue.empty()) {
    const int32_t t = queue.front();
    queue.pop_front();
    for (int32_t s : reverse[t]) {
      if (dfa.min_to_accept[s] == ByteDfa::kNoAccept) {
        dfa.min_to_accept[s] = dfa.min_to_accept[t] + 1;
        queue.push_back(s);
      }
    }
  }
  for (auto& row : dfa.next) {
    for (int32_t& t : row) {
      if (t != ByteDfa::kDead && dfa.min_to_accept[t] == ByteDfa::kNoAccept) t = ByteDfa::kDead;
    }
  }
  if (dfa.start != ByteDfa::kDead && dfa.min_to_accept[dfa.start] == ByteDfa::kNoAccept) {
    dfa.start = ByteDfa::kDead;
  }
}

}  // namespace k3::chat::regex
