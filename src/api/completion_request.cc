// POST /v1/completions: body -> validated CompletionPlan (one prompt: text or token ids).
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

// prompt: a string, an array of token ids, or a one-element array of either (OpenAI's batch form with
// one prompt). Several prompts in one request are not served.
void ReadPrompt(FieldReader& fields, const tokenizer::Tokenizer& tokenizer, CompletionPlan* plan) {
  const nlohmann::json* prompt = fields.Get("prompt");
  if (!fields.ok()) return;
  if (prompt == nullptr) {
    fields.Fail("prompt", "required (a string or an array of token ids)");
    return;
  }
  if (prompt->is_array() && prompt->size() == 1 && ((*prompt)[0].is_string() || (*prompt)[0].is_array()))
    prompt = &(*prompt)[0];
  if (prompt->is_string()) {
    plan->prompt_text = prompt->get<std::string>();
    for (tokenizer::TokenId id : tokenizer.Encode(plan->prompt_text, tokenizer::SpecialTokens::kAllowed))
      plan->request.prompt.push_back(static_cast<int32_t>(id));
  } else if (prompt->is_array()) {
    const auto max_id = static_cast<int64_t>(tokenizer.vocab_size()) - 1;
    std::vector<tokenizer::TokenId> ids;
    for (size_t i = 0; i < prompt->size(); ++i) {
      const auto id = IntegerValue((*prompt)[i], 0, max_id);
      if (!id) {
        fields.Fail(
            fmt::format("prompt[{}]", i),
            (*prompt)[i].is_string()
                ? std::string("several prompts in one request are not supported; send one per request")
                : fmt::format("expected a token id in [0, {}], got {}", max_id, (*prompt)[i].dump()));
        return;
      }
      ids.push_back(static_cast<tokenizer::TokenId>(*id));
      plan->request.prompt.push_back(static_cast<int32_t>(*id));
    }
    Result<std::string> text = tokenizer.Decode(ids);
    if (text.ok()) plan->prompt_text = std::move(*text);
  } else {
    fields.Fail("prompt",
                std::string("expected a string or an array of token ids, got ") + JsonTypeName(*prompt));
    return;
  }
  if (plan->request.prompt.empty()) fields.Fail("prompt", "must not be empty");
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

  ReadPrompt(fields, *ctx.tokenizer, &plan);
  engine::SamplingParams& sampling = plan.request.sampling;
  ReadSamplingFields(fields, ctx.tokenizer->vocab_size(), ctx.max_n, &sampling);
  sampling.max_tokens =
      fields.Int("max_tokens", 1, std::numeric_limits<int64_t>::max()).value_or(kDefaultMaxTokens);
  plan.echo = fields.Bool("echo").value_or(false);
  plan.logprobs = static_cast<int32_t>(fields.Int("logprobs", 0, ctx.max_logprobs).value_or(-1));
  if (const auto suffix = fields.String("suffix"); suffix && !suffix->empty())
    fields.Fail("suffix", "is not supported (Kimi K3 has no fill-in-the-middle format)");
  fields.Int("best_of", 1, ctx.max_n);
  plan.stream = fields.Bool("stream").value_or(false);
  plan.include_usage = ReadStreamOptions(fields, plan.stream);
  ReadVllmGuidedFields(fields, /*chat=*/false);
  if (fields.ok() && plan.echo && plan.logprobs >= 0)
    fields.Fail("echo", "echo together with logprobs is not supported (prompt logprobs are not computed)");
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }
  plan.prompt_tokens = static_cast<int64_t>(plan.request.prompt.size());
  if (auto failure = ApplyContextLimit(plan.prompt_tokens, ctx, "prompt", &sampling)) {
    *error = std::move(*failure);
    return std::nullopt;
  }
  sampling.logprobs = plan.logprobs;
  plan.request.eos_token_ids = ctx.eos_token_ids;
  plan.n = sampling.n;
  plan.stop = sampling.stop;
  plan.stop_token_ids = sampling.stop_token_ids;
  return plan;
}

}  // namespace k3::api
