// libFuzzer target for the chat request parser: any body bytes give either a plan or a 4xx error, never a
// crash, and an accepted plan keeps the invariants the engine relies on (non-empty prompt of valid ids,
// prompt + max_tokens within max_model_len, n within max_n, logprobs <= 20). The same bytes also go
// through the completions, responses, tokenize and detokenize parsers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_api_context.h"
#include "src/api/openai.h"
#include "src/api/responses.h"

namespace {

using k3::fuzz::Check;

void CheckError(const k3::api::ApiError& error) {
  Check(error.http_status >= 400 && error.http_status < 500);
  Check(!error.message.empty());
  Check(!k3::api::ErrorBody(error).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const k3::api::ServerContext& ctx = k3::fuzz::ApiContext();
  k3::api::ApiError error;
  if (auto plan = k3::api::ParseChatCompletion(body, ctx, &error)) {
    const auto& request = plan->request;
    Check(!request.prompt.empty());
    for (int32_t id : request.prompt) Check(id >= 0 && static_cast<size_t>(id) < ctx.tokenizer->vocab_size());
    Check(plan->prompt_tokens == static_cast<int64_t>(request.prompt.size()));
    Check(plan->prompt_tokens + request.sampling.max_tokens <= ctx.max_model_len);
    Check(plan->n >= 1 && plan->n <= ctx.max_n);
    Check(request.sampling.logprobs <= 20);
  } else {
    CheckError(error);
  }
  if (auto plan = k3::api::ParseCompletion(body, ctx, &error)) {
    Check(!plan->prompts.empty() && plan->prompts.size() <= k3::api::kMaxCompletionPrompts);
    const auto requests = k3::api::CompletionRequests(&*plan);
    Check(requests.size() == plan->prompts.size());
    int64_t total = 0;
    for (const auto& request : requests) {
      Check(!request.prompt.empty());
      for (int32_t id : request.prompt)
        Check(id >= 0 && static_cast<size_t>(id) < ctx.tokenizer->vocab_size());
      Check(static_cast<int64_t>(request.prompt.size()) + request.sampling.max_tokens <= ctx.max_model_len);
      Check(request.sampling.prompt_logprobs <= 20);
      total += static_cast<int64_t>(request.prompt.size());
    }
    Check(total == plan->prompt_tokens);
  } else {
    CheckError(error);
  }
  if (auto plan = k3::api::ParseResponses(body, ctx, &error)) {
    Check(!plan->chat.request.prompt.empty());
    Check(plan->chat.prompt_tokens + plan->chat.request.sampling.max_tokens <= ctx.max_model_len);
    Check(plan->stream == plan->chat.stream);
  } else {
    CheckError(error);
  }
  if (!k3::api::Tokenize(body, ctx, &error)) CheckError(error);
  if (!k3::api::Detokenize(body, ctx, &error)) CheckError(error);
  return 0;
}
