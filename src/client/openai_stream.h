// The client side of the OpenAI chat API: a chat.completion body or a stream of chat.completion.chunk
// events turned into one ChatResult (content, reasoning, tool calls, finish reason, usage), with every
// deviation from the API's shape recorded as an error a user can read.
//
// Reasoning text is taken from `reasoning_content` (vLLM, DeepSeek) or `reasoning` (newer vLLM,
// OpenRouter); ChatResult::reasoning_field says which one the server used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/client/http.h"

namespace k3::client {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // the JSON text as sent (concatenated deltas when streamed)
};

struct Usage {
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;  // prompt_tokens_details.cached_tokens; -1 when not reported
};

struct ChatResult {
  std::string content;
  std::string reasoning;
  std::string reasoning_field;  // "reasoning_content", "reasoning", or empty when absent
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;
  std::optional<Usage> usage;
};

// The JSON body of an answer that should be an OpenAI JSON object. HTTP error statuses, non-JSON and
// non-object bodies become errors naming `what` ("POST /v1/chat/completions"), the status and a snippet
// (the OpenAI error message when the body is an OpenAI error).
Result<nlohmann::json> ParseJsonAnswer(const HttpResponse& response, const std::string& what);

// A non-streaming chat.completion body (choices[0] is used).
Result<ChatResult> ParseChatCompletion(const nlohmann::json& body);

Usage ParseUsage(const nlohmann::json& usage);

// Accumulates the SSE payloads of one streamed chat completion (choice 0).
class ChatStreamAccumulator {
 public:
  // One event payload ("[DONE]" is accepted and ignored). Returns true when the chunk carried generated
  // output (content, reasoning or tool-call text), which is what TTFT and ITL are measured on.
  bool OnEvent(std::string_view payload);

  const ChatResult& result() const { return result_; }
  ChatResult& result() { return result_; }
  const std::vector<std::string>& errors() const { return errors_; }
  int chunks() const { return chunks_; }
  // A chunk with an empty choices array and a usage object (stream_options.include_usage).
  bool usage_chunk_seen() const { return usage_chunk_seen_; }

 private:
  void AddError(std::string message);
  ChatResult result_;
  std::vector<std::string> errors_;
  int chunks_ = 0;
  bool usage_chunk_seen_ = false;
};

// "abc..." for evidence and errors: at most max_chars, newlines shown as \n.
std::string Snippet(std::string_view text, size_t max_chars = 120);

}  // namespace k3::client
