// Output parsing over the tolerant marker scan.
#include "src/chat/output_parser.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/chat/xtml_markers.h"

namespace k3::chat {
namespace {

using Kind = XtmlMarker::Kind;

bool IsBlank(std::string_view text) { return text.find_first_not_of(" \t\n\r") == std::string_view::npos; }

class Parser {
 public:
  Parser(std::string_view text, const ParserOptions& options, bool partial)
      : text_(text), options_(options), partial_(partial), scan_(ScanXtml(text, partial)) {}

  ParsedOutput Run() {
    size_t rest = 0;          // where content / tools parsing starts
    size_t first_marker = 0;  // first marker index at or after `rest`
    if (options_.thinking) {
      size_t start = 0;
      size_t m = 0;
      if (!Markers().empty() && Markers()[0].begin == 0 && Markers()[0].Is(Kind::kOpen, "think")) {
        start = Markers()[0].end;
        m = 1;
      }
      while (m < Markers().size() && !EndsReasoning(Markers()[m])) ++m;
      if (m == Markers().size()) {
        out_.reasoning = TextBetween(start, scan_.safe_end);
        return std::move(out_);
      }
      out_.reasoning = TextBetween(start, Markers()[m].begin);
      out_.reasoning_ended = true;
      const bool think_close = Markers()[m].Is(Kind::kClose, "think");
      rest = think_close ? Markers()[m].end : Markers()[m].begin;
      first_marker = think_close ? m + 1 : m;
    }
    ParseContent(rest, first_marker);
    if (options_.tools_enabled) ParseTools(first_marker);
    return std::move(out_);
  }

 private:
  const std::vector<XtmlMarker>& Markers() const { return scan_.markers; }

  // True if `text` ends in a non-empty proper prefix of "<|sep|>" or "<|end_of_msg|>".
  static bool EndsInMarkerPrefix(const std::string& text) {
    for (std::string_view marker : {std::string_view("<|sep|>"), std::string_view("<|end_of_msg|>")}) {
      for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
        if (std::string_view(text).substr(text.size() - n) == marker.substr(0, n)) return true;
      }
    }
    return false;
  }

  static bool EndsReasoning(const XtmlMarker& marker) {
    return marker.Is(Kind::kClose, "think") || marker.Is(Kind::kOpen, "response") ||
           marker.Is(Kind::kOpen, "tools") || marker.Is(Kind::kClose, "message") || marker.kind == Kind::kEnd;
  }
  static bool EndsContent(const XtmlMarker& marker) {
    return marker.Is(Kind::kClose, "response") || marker.Is(Kind::kOpen, "tools") ||
           marker.Is(Kind::kClose, "message") || marker.kind == Kind::kEnd;
  }

  // Text in [begin, end) without the markers inside it.
  // The text of [begin, end) without the markers inside it. Where the text before a dropped marker ends
  // in the beginning of "<|sep|>" or "<|end_of_msg|>" ("...<|end_of_msg|" <|sep|> ">"), a space takes
  // the marker's place, so that joining the pieces never forms a marker that would reach the user (found
  // by fuzz_output_parser). The space depends only on text before the marker, so partial parses stay
  // prefixes of later ones.
  std::string TextBetween(size_t begin, size_t end) const {
    std::string out;
    size_t pos = begin;
    for (const XtmlMarker& marker : Markers()) {
      if (marker.end <= pos) continue;
      if (marker.begin >= end) break;
      if (marker.begin > pos) out.append(text_.substr(pos, marker.begin - pos));
      if (EndsInMarkerPrefix(out)) out.push_back(' ');
      pos = marker.end;
    }
    if (pos < end) out.append(text_.substr(pos, end - pos));
    return out;
  }

  void ParseContent(size_t rest, size_t m) {
    size_t start = rest;
    // The response open (possibly after whitespace and stray markers); absent in non-thinking mode, where
    // it was in the prompt. While only whitespace has arrived, a partial parse cannot tell yet: it waits.
    size_t first = m;
    while (first < Markers().size() && Markers()[first].kind == Kind::kStraySep) ++first;
    if (first < Markers().size() && Markers()[first].Is(Kind::kOpen, "response") &&
        IsBlank(TextBetween(rest, Markers()[first].begin))) {
      start = Markers()[first].end;
      m = first + 1;
    } else if (first == Markers().size() && partial_ && IsBlank(TextBetween(rest, scan_.safe_end))) {
      return;
    }
    if (options_.ignore_end) {
      out_.content = TextBetween(start, scan_.safe_end);
      return;
    }
    while (m < Markers().size() && !EndsContent(Markers()[m])) ++m;
    out_.content = TextBetween(start, m < Markers().size() ? Markers()[m].begin : scan_.safe_end);
  }

  void ParseTools(size_t m) {
    while (m < Markers().size() && !Markers()[m].Is(Kind::kOpen, "tools")) ++m;
    const XtmlMarker* call = nullptr;
    const XtmlMarker* value_open = nullptr;
    nlohmann::ordered_json arguments;
    bool fallback = false;
    for (++m; m < Markers().size(); ++m) {
      const XtmlMarker& marker = Markers()[m];
      if (marker.Is(Kind::kClose, "tools") || marker.Is(Kind::kClose, "message") || marker.kind == Kind::kEnd)
        break;
      if (marker.Is(Kind::kOpen, "call")) {
        call = &marker;
        value_open = nullptr;
        arguments = nlohmann::ordered_json::object();
        fallback = false;
      } else if (call != nullptr && (marker.Is(Kind::kOpen, "argument") || marker.Is(Kind::kOpen, "json"))) {
        value_open = &marker;
      } else if (call != nullptr && value_open != nullptr &&
                 (marker.Is(Kind::kClose, "argument") || marker.Is(Kind::kClose, "json"))) {
        AddValue(*value_open, TextBetween(value_open->end, marker.begin), arguments, fallback);
        value_open = nullptr;
      } else if (call != nullptr && marker.Is(Kind::kClose, "call")) {
        if (marker.end <= scan_.safe_end && marker.end > marker.begin) {
          ParsedToolCall parsed;
          parsed.name = call->Attribute("tool");
          const std::string index = call->Attribute("index");
          std::from_chars(index.data(), index.data() + index.size(), parsed.index);
          parsed.arguments = arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
          parsed.used_fallback = fallback;
          if (!parsed.name.empty()) out_.tool_calls.push_back(std::move(parsed));
        }
        call = nullptr;
        value_open = nullptr;
      }
    }
  }

  static void AddValue(const XtmlMarker& open, const std::string& raw, nlohmann::ordered_json& arguments,
                       bool& fallback) {
    if (open.tag == "json") {
      auto object = nlohmann::ordered_json::parse(raw, nullptr, /*allow_exceptions=*/false);
      if (object.is_discarded() || !object.is_object()) {
        fallback = true;  // the raw text cannot become an arguments object
        return;
      }
      for (auto& [key, value] : object.items()) arguments[key] = value;
      return;
    }
    const std::string key = open.Attribute("key");
    const std::string type = open.Attribute("type");
    if (type == "string" || type.empty()) {
      arguments[key] = raw;
      return;
    }
    auto value = nlohmann::ordered_json::parse(raw, nullptr, /*allow_exceptions=*/false);
    const bool matches =
        !value.is_discarded() &&
        ((type == "number" && value.is_number()) || (type == "boolean" && value.is_boolean()) ||
         (type == "null" && value.is_null()) || (type == "object" && value.is_object()) ||
         (type == "array" && value.is_array()) ||
         (type != "number" && type != "boolean" && type != "null" && type != "object" && type != "array"));
    if (matches) {
      arguments[key] = std::move(value);
    } else {
      arguments[key] = raw;
      fallback = true;
    }
  }

  std::string_view text_;
  ParserOptions options_;
  bool partial_;
  XtmlScan scan_;
  ParsedOutput out_;
};

}  // namespace

ParsedOutput ParseOutput(std::string_view text, const ParserOptions& options, bool partial) {
  return Parser(text, options, partial).Run();
}

}  // namespace k3::chat
