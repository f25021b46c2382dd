// libFuzzer target for the K3 output parser: any text parses without crashing, tool-call arguments are
// always a JSON object, no <|sep|> / <|end_of_msg|> reaches reasoning or content, and the streaming parser
// (chunk sizes taken from the first input bytes) gives exactly the non-streaming result.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/chat/output_parser.h"
#include "src/chat/stream_parser.h"

namespace {

// "<|open|>" / "<|close|>" may stay as literal text when no tag follows them ("a <|open|>! b"); a
// "<|sep|>" or "<|end_of_msg|>" is always a marker and never shown.
bool HasMarker(const std::string& text) {
  for (const char* marker : {"<|sep|>", "<|end_of_msg|>"}) {
    if (text.find(marker) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  const uint8_t chunk_seed = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const k3::chat::ParserOptions options{.thinking = (flags & 1) != 0, .tools_enabled = (flags & 2) != 0};

  const k3::chat::ParsedOutput whole = k3::chat::ParseOutput(text, options);
  for (const auto& call : whole.tool_calls) {
    const auto arguments = nlohmann::json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (arguments.is_discarded() || !arguments.is_object() || call.name.empty()) __builtin_trap();
  }

  k3::chat::StreamParser parser(options);
  k3::chat::ParsedOutput streamed;
  const auto add = [&](const k3::chat::OutputDelta& delta) {
    if (HasMarker(delta.reasoning) || HasMarker(delta.content)) __builtin_trap();
    streamed.reasoning += delta.reasoning;
    streamed.content += delta.content;
    streamed.tool_calls.insert(streamed.tool_calls.end(), delta.tool_calls.begin(), delta.tool_calls.end());
  };
  size_t pos = 0;
  uint32_t state = chunk_seed | 1u;
  while (pos < text.size()) {
    state = state * 1103515245u + 12345u;
    const size_t length = 1 + (state >> 16) % 9;
    add(parser.Push(text.substr(pos, length)));
    pos += length;
  }
  add(parser.Finish());
  if (streamed.reasoning != whole.reasoning || streamed.content != whole.content ||
      streamed.tool_calls != whole.tool_calls) {
    __builtin_trap();
  }
  return 0;
}
