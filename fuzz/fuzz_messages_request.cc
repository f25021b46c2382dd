// libFuzzer target for the Anthropic Messages request parser (src/api/anthropic.h): any body bytes give
// either a plan or a 4xx error in Anthropic's shape, never a crash, and an accepted plan keeps the
// invariants the engine relies on (non-empty prompt of valid ids, prompt + max_tokens within
// max_model_len, one choice). The same bytes also go through count_tokens, whose count must equal the
// plan's prompt length when both accept.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_api_context.h"
#include "src/api/anthropic.h"

namespace {

using k3::fuzz::Check;

void CheckError(const k3::api::ApiError& error) {
  Check(error.http_status >= 400 && error.http_status < 500);
  Check(!error.message.empty());
  const auto body = nlohmann::json::parse(k3::api::AnthropicErrorBody(error), nullptr, false);
  Check(body.is_object() && body.value("type", "") == "error");
  const auto inner = body.find("error");
  Check(inner != body.end() && inner->is_object());
  Check(error.http_status != 400 || inner->value("type", "") == "invalid_request_error");
  // (the message may differ from error.message where ill-formed UTF-8 in it was replaced)
  const auto message = inner->find("message");
  Check(message != inner->end() && message->is_string() && !message->get<std::string>().empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const k3::api::ServerContext& ctx = k3::fuzz::ApiContext();
  k3::api::ApiError error;
  int64_t prompt_tokens = -1;
  if (auto plan = k3::api::ParseAnthropicMessages(body, ctx, &error)) {
    const auto& request = plan->chat.request;
    Check(!request.prompt.empty());
    for (int32_t id : request.prompt) Check(id >= 0 && static_cast<size_t>(id) < ctx.tokenizer->vocab_size());
    Check(plan->chat.prompt_tokens == static_cast<int64_t>(request.prompt.size()));
    Check(plan->chat.prompt_tokens + request.sampling.max_tokens <= ctx.max_model_len);
    Check(plan->n == 1 && plan->chat.n == 1);
    Check(plan->stream == plan->chat.stream);
    prompt_tokens = plan->chat.prompt_tokens;
  } else {
    CheckError(error);
  }
  if (auto count = k3::api::AnthropicCountTokens(body, ctx, &error)) {
    const auto counted = nlohmann::json::parse(*count, nullptr, false);
    Check(counted.is_object() && counted["input_tokens"].is_number_integer());
    if (prompt_tokens >= 0) Check(counted["input_tokens"].get<int64_t>() == prompt_tokens);
  } else {
    CheckError(error);
  }
  return 0;
}
