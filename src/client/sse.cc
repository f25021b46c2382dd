// SseReader: line splitting, field parsing and event dispatch per the WHATWG event-stream rules, with
// the OpenAI conventions ([DONE] last) checked on top.
#include "src/client/sse.h"

#include <fmt/format.h>

namespace k3::client {
namespace {

constexpr size_t kMaxSseErrors = 20;

std::string SseSnippet(std::string_view text) {
  std::string out(text.substr(0, 80));
  if (text.size() > 80) out += "...";
  return out;
}

}  // namespace

void SseReader::AddError(std::string message) {
  if (errors_.size() < kMaxSseErrors) errors_.push_back(std::move(message));
}

void SseReader::Feed(std::string_view bytes) {
  size_t start = 0;
  while (start < bytes.size()) {
    const size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) {
      partial_.append(bytes.substr(start));
      return;
    }
    std::string_view line = bytes.substr(start, nl - start);
    start = nl + 1;
    if (!partial_.empty()) {
      partial_.append(line);
      std::string whole = std::move(partial_);
      partial_.clear();
      if (!whole.empty() && whole.back() == '\r') whole.pop_back();
      OnLine(whole);
    } else {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      OnLine(line);
    }
  }
}

void SseReader::OnLine(std::string_view line) {
  ++line_no_;
  if (line.empty()) {
    Dispatch();
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive)
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (field != "event" && field != "id" && field != "retry") {
    AddError(
        fmt::format("line {}: not an SSE field (expected 'data: ...'): '{}'", line_no_, SseSnippet(line)));
  }
}

void SseReader::Dispatch() {
  if (!has_data_) return;  // blank lines between events are allowed
  ++events_;
  if (saw_done_) AddError(fmt::format("event {}: data after [DONE]: '{}'", events_, SseSnippet(data_)));
  if (data_ == "[DONE]") saw_done_ = true;
  pending_.push_back(std::move(data_));
  data_.clear();
  has_data_ = false;
}

void SseReader::Finish() {
  if (!partial_.empty()) {
    // The last line had no newline: an event is only complete after "\n\n".
    const std::string line = std::move(partial_);
    partial_.clear();
    OnLine(line);
    AddError(fmt::format("the stream ended inside a line: '{}' (every event ends with a blank line)",
                         SseSnippet(line)));
  }
  if (has_data_) {
    AddError(fmt::format("the stream ended inside an event (no blank line after '{}')", SseSnippet(data_)));
    Dispatch();
  }
  if (!saw_done_) AddError("the stream ended without 'data: [DONE]'");
}

std::vector<std::string> SseReader::TakeEvents() {
  std::vector<std::string> out;
  out.swap(pending_);
  return out;
}

}  // namespace k3::client
