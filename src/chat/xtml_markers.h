// Finds the XTML markers in model output text (spec §4.3/§4.4): tags `<|open|>TAG ATTRS<|sep|>` and
// `<|close|>TAG<|sep|>`, and the end markers `<|end_of_msg|>` / `[EOS]`.
//
// Tolerant, as real output needs (anchors.md §4): whitespace may surround the tag name and attributes
// (a detokeniser that adds spaces gives `<|close|> response <|sep|>`), and a tag whose `<|sep|>` was
// elided is complete when the next `<|open|>`/`<|close|>` starts (`<|close|>think<|open|>response...`).
// Marker names written as ordinary BPE text are the same text, so they are found too. A stray `<|sep|>`
// is a marker of its own (dropped from reasoning and content).
//
// In partial mode (streaming) the scan stops before anything that could still become a marker: a proper
// prefix of a marker name at the end, or a tag that has not been terminated yet; `safe_end` is where
// that held-back text starts. In final mode an unterminated tag, or a "<|..." prefix of a marker name,
// at the end counts as a marker (the output was cut off inside it) and safe_end is the end of the text.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace k3::chat {

// The marker names (spec §4.2).
inline constexpr char kXtmlOpen[] = "<|open|>";
inline constexpr char kXtmlClose[] = "<|close|>";
inline constexpr char kXtmlSep[] = "<|sep|>";
inline constexpr char kXtmlEndOfMsg[] = "<|end_of_msg|>";

struct XtmlMarker {
  enum class Kind { kOpen, kClose, kEnd, kStraySep };
  Kind kind;
  std::string tag;                                              // kOpen / kClose
  std::vector<std::pair<std::string, std::string>> attributes;  // unescaped values
  size_t begin = 0;
  size_t end = 0;

  bool Is(Kind k, std::string_view t) const { return kind == k && tag == t; }
  std::string Attribute(std::string_view key) const;
};

struct XtmlScan {
  std::vector<XtmlMarker> markers;  // in text order, non-overlapping
  size_t safe_end = 0;
};

XtmlScan ScanXtml(std::string_view text, bool partial);

// The marker names the scan reads (<|open|>, <|close|>, <|sep|>, <|end_of_msg|>, [EOS]): special tokens
// with these names must reach the parser as text even when other specials are skipped.
std::span<const std::string_view> XtmlMarkerNames();

}  // namespace k3::chat
