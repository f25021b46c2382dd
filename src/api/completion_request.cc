// POST /v1/completions: body -> validated CompletionPlan (prompts: text or token ids, one or a list).
#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "src/api/errors.h"
#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/api/prompt_list.h"
#include "src/api/sampling_fields.h"
#include "src/api/vllm_fields.h"

namespace k3::api {
namespace {

constexpr int64_t kDefaultMaxTokens = 16;  // OpenAI's and vLLM's default for text completions

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

  // OpenAI's batch form: one set of choices per prompt.
  plan.prompts = ReadPromptList(fields, "prompt", "prompt", *ctx.tokenizer, /*keep_text=*/true);
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
  const StreamOptions stream_options = ReadStreamOptions(fields, plan.stream);
  plan.include_usage = stream_options.include_usage || (plan.stream && ctx.force_include_usage);
  plan.continuous_usage = stream_options.continuous_usage;
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
