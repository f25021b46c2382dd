// FakeOpenAi: an OpenAI-shaped server over LoopbackServer for the client's tests and benchmark. It
// answers /v1/models, /health, /metrics (Prometheus text) and /v1/chat/completions (JSON or SSE) the
// way vLLM does, and each option breaks one thing on purpose so every verify item can be seen failing.
//
// Its "tokenizer" counts whitespace-separated words of the message contents (string contents and text
// parts); an image part (a data: URL) counts as K3's image prompt: 3 + N + the words of "image WxH" (2),
// N from image::PlanGeometry with K3's processor config. POST /tokenize counts the words of "prompt".
// The output is the words
// " tok0 tok1 ..." (max_tokens caps output_tokens). Tool calls carry arguments built from the first
// tool's JSON schema (the required properties, values by type or the first enum value).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "src/client/testing/loopback_server.h"

namespace k3::client::testing {

struct FakeOpenAiOptions {
  std::string model = "fake-k3";
  std::string api_key;               // non-empty: requests need "Bearer <key>"
  bool health = true;                // false: /health answers 503
  bool auto_tool_choice = true;      // false: tool_choice "auto" with tools is a 400 (vLLM without a parser)
  bool tool_calls = true;            // false: tools requests get plain content (the model answered in text)
  bool call_in_content = false;      // with tool_calls false: that content is the call written as text
  bool valid_tool_arguments = true;  // false: arguments miss the required properties
  std::string reasoning_field = "reasoning_content";  // empty: no reasoning output
  bool prefix_cache = true;                           // false: no cached tokens, counters stay 0
  bool cached_tokens_in_usage = true;                 // false: hits only in /metrics
  bool stream_matches = true;                         // false: streamed text differs from non-streamed
  bool sse_done = true;                               // false: no "data: [DONE]"
  bool sse_usage = true;                              // false: no usage chunk even when asked
  bool sse_blank_lines = true;                        // false: events not separated by blank lines
  bool openai_errors = true;                          // false: a bad request gets a plain-text 400
  bool metrics = true;                                // false: /metrics answers 404
  bool vision = true;                                 // false: image parts are a 400 "no vision tower"
  std::string image_refusal;                          // non-empty: image parts are a 400 with this message
  int image_token_error = 0;                          // added to every image's token count (a miscount)
  bool tokenize = true;                               // false: POST /tokenize answers 404
  int output_tokens = 8;
  double first_token_delay_s = 0;  // before the first streamed output chunk
  double token_interval_s = 0;     // between streamed output chunks
};

class FakeOpenAi {
 public:
  explicit FakeOpenAi(FakeOpenAiOptions options);
  std::string url() const { return server_->url(); }
  int64_t requests() const { return server_->requests(); }
  // Totals over all chat requests, as /metrics reports them.
  int64_t prompt_tokens_total() const;
  int64_t generation_tokens_total() const;

 private:
  void Handle(const TestRequest& request, TestConnection& conn);
  void HandleChat(const TestRequest& request, TestConnection& conn);

  FakeOpenAiOptions options_;
  mutable std::mutex mu_;
  std::set<std::string> seen_prompts_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  int64_t cache_queries_ = 0;
  int64_t cache_hits_ = 0;
  int64_t requests_total_ = 0;
  std::unique_ptr<LoopbackServer> server_;  // last: stops before the state above goes
};

}  // namespace k3::client::testing
