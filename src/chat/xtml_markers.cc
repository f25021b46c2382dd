// Tolerant XTML marker scanner.
#include "src/chat/xtml_markers.h"

#include "src/chat/json_text.h"

namespace k3::chat {
namespace {

constexpr std::string_view kOpen = kXtmlOpen;
constexpr std::string_view kClose = kXtmlClose;
constexpr std::string_view kSep = kXtmlSep;
constexpr std::string_view kEndOfMsg = kXtmlEndOfMsg;
constexpr std::string_view kEos = "[EOS]";
constexpr std::string_view kNames[] = {kOpen, kClose, kSep, kEndOfMsg, kEos};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}
bool StartsWith(std::string_view text, size_t pos, std::string_view prefix) {
  return text.substr(pos, prefix.size()) == prefix;
}
// text[pos..] is a non-empty proper prefix of some marker name and reaches the end of text.
bool IsNamePrefixAtEnd(std::string_view text, size_t pos) {
  const std::string_view rest = text.substr(pos);
  for (std::string_view name : kNames) {
    if (rest.size() < name.size() && name.substr(0, rest.size()) == rest) return true;
  }
  return false;
}

enum class TagResult { kComplete, kIncomplete, kInvalid };

// Parses TAG ATTRS <|sep|> after an open/close name at `pos`; fills marker on success.
TagResult ParseTag(std::string_view text, size_t pos, XtmlMarker& marker) {
  size_t i = pos;
  const auto at_end = [&] { return i >= text.size(); };
  while (!at_end() && IsSpace(text[i])) ++i;
  const size_t tag_start = i;
  while (!at_end() && IsNameChar(text[i])) ++i;
  if (at_end()) return TagResult::kIncomplete;
  if (i == tag_start) return TagResult::kInvalid;
  marker.tag = std::string(text.substr(tag_start, i - tag_start));
  while (true) {
    while (!at_end() && IsSpace(text[i])) ++i;
    if (at_end()) return TagResult::kIncomplete;
    if (StartsWith(text, i, kSep)) {
      marker.end = i + kSep.size();
      return TagResult::kComplete;
    }
    if (StartsWith(text, i, kOpen) || StartsWith(text, i, kClose)) {  // elided <|sep|>
      marker.end = i;
      return TagResult::kComplete;
    }
    if (text[i] == '<' && IsNamePrefixAtEnd(text, i)) return TagResult::kIncomplete;
    // An attribute: NAME="VALUE" (closing-tag attributes are accepted and ignored).
    const size_t key_start = i;
    while (!at_end() && IsNameChar(text[i])) ++i;
    if (at_end()) return TagResult::kIncomplete;
    if (i == key_start || text[i] != '=') return TagResult::kInvalid;
    const std::string key(text.substr(key_start, i - key_start));
    if (++i >= text.size()) return TagResult::kIncomplete;
    if (text[i] != '"') return TagResult::kInvalid;
    const size_t value_end = text.find('"', i + 1);
    if (value_end == std::string_view::npos) {
      // Values never contain markers; one that does means this was not a tag.
      return text.find("<|", i + 1) == std::string_view::npos ? TagResult::kIncomplete : TagResult::kInvalid;
    }
    marker.attributes.emplace_back(key, UnescapeAttribute(text.substr(i + 1, value_end - i - 1)));
    i = value_end + 1;
    if (!at_end() && !IsSpace(text[i]) && !StartsWith(text, i, "<")) return TagResult::kInvalid;
  }
}

}  // namespace

std::string XtmlMarker::Attribute(std::string_view key) const {
  for (const auto& [k, v] : attributes) {
    if (k == key) return v;
  }
  return "";
}

std::span<const std::string_view> XtmlMarkerNames() { return kNames; }

XtmlScan ScanXtml(std::string_view text, bool partial) {
  XtmlScan scan;
  scan.safe_end = text.size();
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t next = text.find_first_of("<[", pos);
    if (next == std::string_view::npos) break;
    pos = next;
    XtmlMarker marker;
    marker.begin = pos;
    const bool open = StartsWith(text, pos, kOpen);
    if (open || StartsWith(text, pos, kClose)) {
      marker.kind = open ? XtmlMarker::Kind::kOpen : XtmlMarker::Kind::kClose;
      const TagResult result = ParseTag(text, pos + (open ? kOpen : kClose).size(), marker);
      if (result == TagResult::kComplete) {
        pos = marker.end;
        scan.markers.push_back(std::move(marker));
        continue;
      }
      if (result == TagResult::kIncomplete) {
        if (partial) {
          scan.safe_end = pos;
          return scan;
        }
        marker.end = text.size();  // cut off inside the tag: still a marker (never shown as text)
        scan.markers.push_back(std::move(marker));
        return scan;
      }
      ++pos;  // not a tag: ordinary text
      continue;
    }
    for (auto [name, kind] :
         {std::pair{kEndOfMsg, XtmlMarker::Kind::kEnd}, std::pair{kEos, XtmlMarker::Kind::kEnd},
          std::pair{kSep, XtmlMarker::Kind::kStraySep}}) {
      if (StartsWith(text, pos, name)) {
        marker.kind = kind;
        marker.end = pos + name.size();
        break;
      }
    }
    if (marker.end > 0) {
      pos = marker.end;
      scan.markers.push_back(std::move(marker));
      continue;
    }
    if (IsNamePrefixAtEnd(text, pos)) {
      if (partial) {
        scan.safe_end = pos;
        return scan;
      }
      if (StartsWith(text, pos, "<|")) {  // output cut off inside a marker name: drop the fragment
        marker.kind = XtmlMarker::Kind::kStraySep;
        marker.end = text.size();
        scan.markers.push_back(std::move(marker));
        return scan;
      }
    }
    ++pos;
  }
  return scan;
}

}  // namespace k3::chat
