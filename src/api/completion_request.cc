// POST /v1/completions: body -> validated CompletionPlan (prompts: text or token ids, one or a list).
#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "src/api/errors.h"
#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/api/sampling_fields.h"
#include "src/api/vllm_fields.h"

namespace k3::api {
namespace {

constexpr int64_t kDefaultMaxTokens = 16;  // OpenAI's and vLLM's default for text completions

// One prompt: a string or an array of token ids. `path` names it in errors.
std::optional<CompletionPrompt> ReadOnePrompt(FieldReader& fields, const nlohmann::json& prompt,
                                              const std::string& path,
                                              const tokenizer::Tokenizer& tokenizer) {
  CompletionPrompt out;
  if (prompt.is_string()) {
    out.text = prompt.get<std::string>();
    for (tokenizer::TokenId id : tokenizer.Encode(out.text, tokenizer::SpecialTokens::kAllowed))
      out.ids.push_back(static_cast<int32_t>(id));
  } else if (prompt.is_array()) {
    const auto max_id = static_cast<int64_t>(tokenizer.vocab_size()) - 1;
    std::vector<tokenizer::TokenId> ids;
    for (size_t i = 0; i < prompt.size(); ++i) {
      const auto id = IntegerValue(prompt[i], 0, max_id);
      if (!id) {
        fields.Fail(fmt::format("{}[{}]", path, i),
                    fmt::format("expected a token id in [0, {}], got {}", max_id, prompt[i].dump()));
        return std::nullopt;
      }
      ids.push_back(static_cast<tokenizer::TokenId>(*id));
      out.ids.push_back(static_cast<int32_t>(*id));
    }
    Result<std::string> text = tokenizer.Decode(ids);
    if (text.ok()) out.text = std::move(*text);
  } else {
    fields.Fail(path, std::string("expected a string or an array of token ids, got ") + JsonTypeName(prompt));
    return std::nullopt;
  }
  if (out.ids.empty()) {
    fields.Fail(path, "must not be empty");
    return std::nullopt;
  }
  return out;
}

// prompt: a string, an array of token ids, or a list of strings / token-id arrays (OpenAI's batch form:
// one set of choices per prompt).
void ReadPrompts(FieldReader& fields, const tokenizer::Tokenizer& tokenizer, CompletionPlan* plan) {
  const nlohmann::json* prompt = fields.Get("prompt");
  if (!fields.ok()) return;
  if (prompt == nullptr) {
    fields.Fail("prompt", "required (a string, an array of token ids, or a list of either)");
    return;
  }
  const bool batch =
      prompt->is_array() && !prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array());
  if (!batch) {
    if (auto one = ReadOnePrompt(fields, *prompt, "prompt", tokenizer))
      plan->prompts.push_back(std::move(*one));
    return;
  }
  if (prompt->size() > kMaxCompletionPrompts) {
    fields.Fail("prompt", fmt::format("at most {} prompts per request, got {}; split the batch",
                                      kMaxCompletionPrompts, prompt->size()));
    return;
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const nlohmann::json& item = (*prompt)[i];
    const std::string path = fmt::format("prompt[{}]", i);
    if (!item.is_string() && !item.is_array()) {
      fields.Fail(path, std::string("expected a string or an array of token ids (every prompt of a list "
                                    "has one of these forms), got ") +
                            JsonTypeName(item));
      return;
    }
    auto one = ReadOnePrompt(fields, item, path, tokenizer);
    if (!one) return;
    plan->prompts.push_back(std::move(*one));
  }
}

}  // namespace

std::optional<CompletionPlan> ParseCompletion(std::string_view body, const ServerContext& ctx,
                                              ApiError* error) {
  std::optional<nlohmann::json> request = ParseRequestBody(body, error);
  if (!request) return std::nullopt;
  FieldReader fields(*request, "");
  CompletionPlan plan;
  const auto model = fields.String("model");
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }
  plan.model = model.value_or(ctx.served_model_name);
  if (!ctx.Serves(plan.model)) {
    *error = ModelNotFound(plan.model, ctx);
    return std::nullopt;
  }

  ReadPrompts(fields, *ctx.tokenizer, &plan);
  engine::SamplingParams& sampling = plan.request.sampling;
  ApplySamplingDefaults(ctx.sampling_defaults, &sampling);
  ReadSamplingFields(fields, ctx.tokenizer->vocab_size(), ctx.max_n, &sampling);
  const std::optional<int64_t> max_tokens = fields.Int("max_tokens", 1, std::numeric_limits<int64_t>::max());
  plan.echo = fields.Bool("echo").value_or(false);
  plan.logprobs = static_cast<int32_t>(fields.Int("logprobs", 0, ctx.max_logprobs).value_or(-1));
  if (const auto suffix = fields.String("suffix"); suffix && !suffix->empty())
    fields.Fail("suffix", "is not supported (Kimi K3 has no fill-in-the-middle format)");
  fields.Int("best_of", 1, ctx.max_n);
  plan.stream = fields.Bool("stream").value_or(false);
  plan.include_usage = ReadStreamOptions(fields, plan.stream);
  plan.prompt_logprobs = ReadPromptLogprobs(fields, plan.stream, ctx.max_logprobs);
  ReadVllmGuidedFields(fields, /*chat=*/false);
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }
  int64_t longest = 0;
  for (const CompletionPrompt& prompt : plan.prompts) {
    plan.prompt_tokens += static_cast<int64_t>(prompt.ids.size());
    longest = std::max(longest, static_cast<int64_t>(prompt.ids.size()));
  }
  sampling.max_tokens = max_tokens.value_or(
      ctx.sampling_defaults.max_tokens ? DefaultMaxTokens(*ctx.sampling_defaults.max_tokens, longest, ctx)
                                       : kDefaultMaxTokens);
  if (auto failure = ApplyContextLimit(longest, ctx, "prompt", &sampling)) {
    *error = std::move(*failure);
    return std::nullopt;
  }
  sampling.logprobs = plan.logprobs;
  // echo + logprobs: the echoed prompt tokens carry logprobs too (lm-eval's loglikelihood requests).
  sampling.prompt_logprobs = std::max(plan.prompt_logprobs, plan.echo ? plan.logprobs : -1);
  plan.request.eos_token_ids = ctx.eos_token_ids;
  plan.n = sampling.n;
  plan.stop = sampling.stop;
  plan.stop_token_ids = sampling.stop_token_ids;
  return plan;
}

std::vector<engine::Request> CompletionRequests(CompletionPlan* plan) {
  std::vector<engine::Request> requests(plan->prompts.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].prompt = plan->prompts[i].ids;
    requests[i].sampling = plan->request.sampling;
    requests[i].eos_token_ids = plan->request.eos_token_ids;
  }
  return requests;
}

}  // namespace k3::api
