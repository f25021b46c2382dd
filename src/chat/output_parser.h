// Parses K3 model output (spec §4.3/§4.4) into reasoning, content and tool calls, whole
// (ParseOutput) or token by token (StreamParser, stream_parser.h, built on the partial mode here).
//
// Rules (vLLM kimi_k3 parsers, plus the fixes listed in anchors.md §4):
// - thinking off: no reasoning. Thinking on: reasoning starts at 0 (the open marker was in the prompt)
//   or after a `<|open|>think<|sep|>` printed at offset 0, and ends at the first think close, or at the
//   first response-open / tools-open / message-close / end marker when the model left the think close
//   out (anchor 1). Without any of these, everything is reasoning (cut off while thinking, anchor 6).
// - content: after reasoning, the body of `<|open|>response<|sep|>` (the open may be missing, and
//   whitespace before it is skipped), up to response-close, tools-open, message-close or an end marker
//   (anchor 3). Markers never appear in reasoning or content (anchor 2, 13).
// - tool calls (only when enabled: the request has tools and tool_choice != "none"): each complete
//   `<|open|>call tool=".." index=".."<|sep|> ... <|close|>call<|sep|>` in the tools channel. Arguments
//   of type string are raw text; other types are JSON-decoded, falling back to the raw text (flagged)
//   when that fails (anchor 7). `<|open|>json type="object"<|sep|>RAW<|close|>json<|sep|>` gives the
//   arguments object directly. Arguments are re-serialised as a compact JSON object, always valid
//   JSON. Calls without a tool name are dropped.
// Known limitation (spec): a body that literally contains a closing marker is ambiguous.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3::chat {

struct ParserOptions {
  bool thinking = true;
  bool tools_enabled = false;
  // ignore_eos: generation ran past the end of the message, so the content runs to the end of the output
  // (the markers after it are dropped, their text kept) instead of stopping at the first end marker.
  bool ignore_end = false;
};

struct ParsedToolCall {
  std::string name;
  std::string arguments;       // a JSON object, compact
  int index = 0;               // the `index` attribute (0 when missing or not a number)
  bool used_fallback = false;  // an argument or json block could not be decoded as its type said
  bool operator==(const ParsedToolCall&) const = default;
};

struct ParsedOutput {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;
  bool reasoning_ended = false;  // a think close (or what implies it) was seen
};

// partial = true: text is a prefix of the output (streaming); anything that may still become a marker
// is left out, and only complete tool calls are returned. The result for a prefix is always a prefix
// of the result for the whole text (reasoning, content, tool_calls), which StreamParser relies on.
ParsedOutput ParseOutput(std::string_view text, const ParserOptions& options, bool partial = false);

}  // namespace k3::chat
