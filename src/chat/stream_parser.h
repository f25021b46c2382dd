// StreamParser: the streaming form of ParseOutput. Text arrives in chunks of any size (one token, one
// character, several tool calls at once); each Push returns what became certain: new reasoning and
// content text and newly completed tool calls. Text that may still turn out to be part of a marker is
// held back, so no marker text is ever emitted, and Finish releases the rest at the end of output. The
// concatenated deltas equal ParseOutput of the whole text, for every way of chunking it (anchors.md §4
// items 1, 2, 10).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/chat/output_parser.h"

namespace k3::chat {

struct OutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class StreamParser {
 public:
  explicit StreamParser(ParserOptions options) : options_(options) {}

  OutputDelta Push(std::string_view text);
  // End of output (stop token, length limit or cancel).
  OutputDelta Finish();

  const std::string& text() const { return text_; }

 private:
  OutputDelta Diff(ParsedOutput parsed);

  ParserOptions options_;
  std::string text_;
  size_t reasoning_sent_ = 0;
  size_t content_sent_ = 0;
  size_t calls_sent_ = 0;
};

}  // namespace k3::chat
