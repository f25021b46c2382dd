// patternProperties key automata (see object_keys.h).
#include "src/chat/object_keys.h"

#include "src/chat/string_schema.h"

namespace k3::chat::grammar {
namespace {

// The texts `dfa` does not accept (a missing transition leads to a sink that accepts everything).
regex::ByteFilter Complement(const regex::ByteDfa& dfa) {
  const auto sink = static_cast<int32_t>(dfa.next.size());
  regex::ByteFilter filter;
  filter.start = dfa.Empty() ? sink : dfa.start;
  filter.next = [&dfa, sink](int32_t state, uint8_t byte) {
    if (state == sink) return sink;
    const int32_t next = dfa.next[static_cast<size_t>(state)][byte];
    return next == regex::ByteDfa::kDead ? sink : next;
  };
  filter.accepting = [&dfa, sink](int32_t state) {
    return state == sink || dfa.accepting[static_cast<size_t>(state)] == 0;
  };
  return filter;
}

// Texts other than the names in `trie`.
regex::ByteFilter NotANameIn(const SymbolTrie& trie) {
  const auto off = static_cast<int32_t>(trie.nodes.size());
  regex::ByteFilter filter;
  filter.start = 0;
  filter.next = [&trie, off](int32_t state, uint8_t byte) {
    if (state == off) return off;
    const uint32_t child = trie.Child(static_cast<uint32_t>(state), byte);
    return child == SymbolTrie::kNone ? off : static_cast<int32_t>(child);
  };
  filter.accepting = [&trie, off](int32_t state) {
    return state == off || !trie.nodes[static_cast<size_t>(state)].terminal;
  };
  return filter;
}

// Texts without '&' and '<' (an XTML attribute value written raw).
regex::ByteFilter NoAttributeSpecials() {
  regex::ByteFilter filter;
  filter.start = 0;
  filter.next = [](int32_t, uint8_t byte) { return byte == '&' || byte == '<' ? -1 : 0; };
  filter.accepting = [](int32_t) { return true; };
  return filter;
}

}  // namespace

Result<std::shared_ptr<const regex::ByteDfa>> ObjectKeyDfa(const std::vector<std::string>& patterns,
                                                           int which, const SymbolTrie& declared_names,
                                                           bool attribute, const std::string& what) {
  K3_ASSIGN_OR_RETURN(regex::ByteDfa dfa,
                      which >= 0 ? CompileConstrainedRegex(patterns[static_cast<size_t>(which)], false, what)
                                 : CompileConstrainedRegex("[\\s\\S]*", true, what));
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (static_cast<int>(i) == which) continue;
    K3_ASSIGN_OR_RETURN(regex::ByteDfa other, CompileConstrainedRegex(patterns[i], false, what));
    K3_ASSIGN_OR_RETURN(dfa, regex::Intersect(dfa, Complement(other), kMaxStringDfaStates, what));
  }
  K3_ASSIGN_OR_RETURN(dfa, regex::Intersect(dfa, NotANameIn(declared_names), kMaxStringDfaStates, what));
  if (attribute) {
    K3_ASSIGN_OR_RETURN(dfa, regex::Intersect(dfa, NoAttributeSpecials(), kMaxStringDfaStates, what));
  }
  return std::make_shared<const regex::ByteDfa>(std::move(dfa));
}

}  // namespace k3::chat::grammar
