// POST /v1/chat/completions: body -> validated ChatPlan (rendered prompt ids, sampling, constraint).
#include <limits>
#include <utility>

#include "src/api/chat_constraint.h"
#include "src/api/chat_messages.h"
#include "src/api/chat_options.h"
#include "src/api/errors.h"
#include "src/api/image_parts.h"
#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/api/sampling_fields.h"
#include "src/api/vllm_fields.h"
#include "src/chat/xtml_markers.h"

namespace k3::api {
namespace {

// model: absent means the served model (vLLM); anything else must be its name.
std::optional<ApiError> CheckModel(FieldReader& fields, const ServerContext& ctx, std::string* model) {
  const auto given = fields.String("model");
  if (!fields.ok()) return fields.error();
  *model = given.value_or(ctx.served_model_name);
  if (!ctx.Serves(*model)) return ModelNotFound(*model, ctx);
  return std::nullopt;
}

}  // namespace

std::optional<ChatPlan> ParseChatCompletion(std::string_view body, const ServerContext& ctx,
                                            ApiError* error) {
  std::optional<nlohmann::json> request = ParseRequestBody(body, error);
  if (!request) return std::nullopt;
  FieldReader fields(*request, "");
  ChatPlan plan;
  if (auto failure = CheckModel(fields, ctx, &plan.model)) {
    *error = std::move(*failure);
    return std::nullopt;
  }

  std::optional<nlohmann::json> messages = ReadMessages(fields, ctx.max_messages);
  ChatOptions options = ReadChatOptions(fields, ctx);
  engine::SamplingParams& sampling = plan.request.sampling;
  ApplySamplingDefaults(ctx.sampling_defaults, &sampling);
  ReadSamplingFields(fields, ctx.tokenizer->vocab_size(), ctx.max_n, &sampling);
  // max_completion_tokens replaces max_tokens in OpenAI's API; vLLM takes either, the new name first.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const auto max_tokens = fields.Int("max_tokens", 1, kMax);
  const auto max_completion_tokens = fields.Int("max_completion_tokens", 1, kMax);
  sampling.max_tokens = max_completion_tokens.value_or(max_tokens.value_or(0));
  const bool default_max_tokens = !max_completion_tokens && !max_tokens && ctx.sampling_defaults.max_tokens;
  plan.logprobs = fields.Bool("logprobs").value_or(false);
  plan.top_logprobs = static_cast<int32_t>(fields.Int("top_logprobs", 0, ctx.max_logprobs).value_or(0));
  if (fields.ok() && plan.top_logprobs > 0 && !plan.logprobs)
    fields.Fail("top_logprobs", "requires `logprobs` to be true");
  plan.stream = fields.Bool("stream").value_or(false);
  const StreamOptions stream_options = ReadStreamOptions(fields, plan.stream);
  plan.include_usage = stream_options.include_usage || (plan.stream && ctx.force_include_usage);
  plan.continuous_usage = stream_options.continuous_usage;
  plan.prompt_logprobs = ReadPromptLogprobs(fields, plan.stream, ctx.max_logprobs);
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }

  std::vector<LoadedImage> images;
  if (!LoadImages(*messages, ctx, &images, error)) return std::nullopt;
  options.render.images = RenderImageParts(images);
  Result<chat::RenderedPrompt> rendered = chat::RenderXtml(*ctx.tokenizer, *messages, options.render);
  if (!rendered.ok()) {
    *error = FieldError("messages", rendered.status().message());
    return std::nullopt;
  }
  MatchOpenChannel(rendered->open_channel, &options);
  plan.request.prompt.assign(rendered->ids.begin(), rendered->ids.end());
  plan.prompt_text = std::move(rendered->text);
  plan.request.images = PromptImages(images, rendered->images);
  plan.prompt_tokens = static_cast<int64_t>(plan.request.prompt.size());
  if (default_max_tokens)
    sampling.max_tokens = DefaultMaxTokens(*ctx.sampling_defaults.max_tokens, plan.prompt_tokens, ctx);
  if (auto failure = ApplyContextLimit(plan.prompt_tokens, ctx, "messages", &sampling)) {
    *error = std::move(*failure);
    return std::nullopt;
  }
  if (auto failure = MakeChatConstraint(options, ctx, plan.prompt_tokens, sampling.max_tokens,
                                        &plan.request.constraint)) {
    *error = std::move(*failure);
    return std::nullopt;
  }

  // The same precedence as MakeChatConstraint: a plain-text constraint, a JSON value, forced tool calls.
  const bool plain_text = options.guided_regex.has_value() || options.guided_choice.has_value();
  if (!plain_text && options.json_output && !options.json_schema.is_null()) {
    plan.schema_check = chat::OutputSchemaCheck::ForJson(options.json_schema);
  } else if (!plain_text && options.tool_call_required && !options.json_output) {
    plan.schema_check = chat::OutputSchemaCheck::ForToolCalls(options.render.tools, options.forced_function);
  }

  sampling.logprobs = plan.logprobs ? plan.top_logprobs : -1;
  sampling.prompt_logprobs = plan.prompt_logprobs;
  plan.request.eos_token_ids = ctx.eos_token_ids;
  // The output parser reads the XTML markup from the text, so those specials stay even when
  // skip_special_tokens drops the rest (<|media_begin|>, <|reserved_token_N|>, ...).
  for (std::string_view name : chat::XtmlMarkerNames()) {
    if (auto id = ctx.tokenizer->FindSpecial(name))
      plan.request.keep_special_ids.push_back(static_cast<int32_t>(*id));
  }
  plan.parser = options.parser;
  plan.parser.ignore_end = sampling.ignore_eos;  // the text after the message's end is content too
  plan.include_reasoning = options.include_reasoning;
  plan.n = sampling.n;
  plan.stop = sampling.stop;
  plan.stop_token_ids = sampling.stop_token_ids;
  return plan;
}

}  // namespace k3::api
