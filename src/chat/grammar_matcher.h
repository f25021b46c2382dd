// Runs a Grammar (grammar.h) over symbols: a set of parse threads, each a stack of frames, advanced one
// symbol at a time. Several threads exist only while the text so far fits several alternatives (anyOf
// branches, object members whose keys share a prefix); each thread on its own can always be completed,
// so a live state never dead-ends: frames are only pushed where the value still fits the nesting limit
// (Node::need), and every phase of every node has a way forward.
//
// Frames are popped lazily: a frame that could end stays on the stack until a symbol arrives that it
// cannot take, which is then offered to its parent (numbers and free text end that way).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/chat/grammar.h"

namespace k3::chat::grammar {

struct Frame {
  uint32_t node = 0;
  uint32_t pos = 0;    // phase / sub-state / trie node, per node kind
  uint32_t a = 0;      // per kind: member index, item count, digit count, marker-filter state
  uint32_t b = 0;      // per kind: excluded-name trie node, "after comma"
  uint32_t depth = 0;  // containers open in this thread up to and including this frame
  uint32_t count = 0;  // kObject: members written so far; kArray with unique_literals: values written
  bool operator==(const Frame&) const = default;
};

// Threads stored back to back: thread i is frames[ends[i-1] .. ends[i]).
struct MatchState {
  std::vector<Frame> frames;
  std::vector<uint32_t> ends;
  size_t num_threads() const { return ends.size(); }
  void Clear() {
    frames.clear();
    ends.clear();
  }
};

// kString sub-state after the closing quote.
inline constexpr uint32_t kStringDone = 99;
// kObject phases (Frame::pos): before '{' (args mode: members may start), a member may start (a = first
// candidate, b = 1 after a comma), inside member a, after member a, after '}'.
inline constexpr uint32_t kObjOpen = 0, kObjMembers = 1, kObjIn = 2, kObjAfter = 3, kObjDone = 4;
// kArray phases: before '[', after '[', inside an item, after an item (a = items so far), after ']',
// after ','.
inline constexpr uint32_t kArrOpen = 0, kArrFirst = 1, kArrIn = 2, kArrAfter = 3, kArrDone = 4, kArrNext = 5;

// One symbol into a leaf frame (kString or kRawText) alone; false when the leaf refuses it. Used by the
// mask fast path, which treats a leaf's inside (everything before a string's closing quote) without
// the rest of the stack.
bool StepLeaf(const Node& node, Frame& frame, int symbol);

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // The state before any symbol.
  MatchState Initial() const;
  // out = in after `symbol`; false (out empty) when no thread can take it. out must not alias in.
  bool Advance(const MatchState& in, int symbol, MatchState& out);
  // Does now what the next symbol would do anyway: pops finished literals that cannot go on and pushes
  // free text a sequence has reached, so the state is a leaf (SingleLeaf) where it can be.
  void Settle(MatchState& state) const;
  // Some thread of the state is a complete output.
  bool IsComplete(const MatchState& state) const;

  // True when the state is one thread whose top frame is free text or a string's content: then a token
  // either stays inside that leaf (independent of the stack below) or, for a string, leaves it through
  // the closing quote. Free text (kRawText) is always followed by markup, so bytes never leave it.
  bool SingleLeaf(const MatchState& state, Frame* leaf) const;

  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& shared_grammar() const { return grammar_; }
  // What a parent frame becomes once the child on top of it (`child`, when known) has finished.
  void ChildDone(Frame& parent, const Frame* child = nullptr) const;

 private:
  using Thread = std::vector<Frame>;
  void Step(const Frame* frames, size_t size, int symbol, int level, MatchState& out);
  void PopAndStep(const Frame* frames, size_t size, int symbol, int level, MatchState& out);
  // Pushes node on a copy of frames (if it fits the nesting limit) and steps the symbol into it.
  void PushAndStep(const Frame* frames, size_t size, uint32_t node, int symbol, int level, MatchState& out);
  bool Accepting(const Frame* frames, size_t size, int guard) const;
  // The literal frame on top (frames[size - 1]): the bits of the values at or below `trie_node` that its
  // uniqueItems array has not written yet (every bit when it is not such an item).
  uint32_t UnusedBelow(const Frame* frames, size_t size, uint32_t trie_node) const;
  Thread& Scratch(int level);
  static void Emit(const Thread& thread, MatchState& out);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Thread> scratch_;  // one working copy per recursion level
};

}  // namespace k3::chat::grammar
