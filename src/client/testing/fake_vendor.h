// FakeVendor: an OpenAI-shaped chat server over LoopbackServer for the vendor suite's tests. Unlike
// FakeOpenAi it counts prompts as k3 does (the given tokenizer + k3's XTML renderer, images measured with
// K3's processor config), answers forced tool calls and response_format with values that satisfy the
// declared schema, and can serve /v1/chat/completions/render. Each option breaks one vendor item on
// purpose: a token id leaked into finish_reason, a miscounted prompt, tool arguments that break their
// schema, the usage chunk before the finish_reason, user-typed special-token names counted as special
// ids, the thinking effort ignored.
#pragma once

#include <memory>
#include <string>

#include "src/client/testing/loopback_server.h"
#include "src/tokenizer/tokenizer.h"

namespace k3::client::testing {

struct FakeVendorOptions {
  std::string model = "fake-k3";
  const tokenizer::Tokenizer* tokenizer = nullptr;  // required: counts the prompts
  std::string finish_reason_leak;    // non-empty: written instead of "stop" (e.g. "stop_163586")
  int prompt_token_error = 0;        // added to every usage.prompt_tokens
  bool valid_tool_arguments = true;  // false: arguments {"unexpected": 1}
  bool usage_before_finish = false;  // true: the usage chunk precedes the finish_reason chunk
  bool specials_as_ids = false;      // true: special-token names in user text count as special ids
  bool ignore_effort = false;        // true: reasoning_effort / thinking_effort do not reach the prompt
  bool render_route = false;         // true: POST /v1/chat/completions/render answers
  bool vision = true;                // false: image parts are a 400 naming the missing vision tower
  int output_tokens = 4;             // words of a text answer ("stop" when max_tokens allows them all)
};

class FakeVendor {
 public:
  explicit FakeVendor(FakeVendorOptions options);
  std::string url() const { return server_->url(); }

 private:
  void Handle(const TestRequest& request, TestConnection& conn);

  FakeVendorOptions options_;
  std::unique_ptr<LoopbackServer> server_;
};

}  // namespace k3::client::testing
