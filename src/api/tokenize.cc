// POST /tokenize and POST /detokenize as vLLM answers them, and GET /v1/models.
#include <fmt/format.h>

#include "src/api/chat_messages.h"
#include "src/api/chat_options.h"
#include "src/api/errors.h"
#include "src/api/image_parts.h"
#include "src/api/json_dump.h"
#include "src/api/json_fields.h"
#include "src/api/openai.h"
#include "src/api/response_parts.h"

namespace k3::api {
namespace {

// Parses the body and checks `model` when given.
std::optional<nlohmann::json> ParseWithModel(std::string_view body, const ServerContext& ctx,
                                             ApiError* error) {
  std::optional<nlohmann::json> request = ParseRequestBody(body, error);
  if (!request) return std::nullopt;
  FieldReader fields(*request, "");
  const auto model = fields.String("model");
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }
  if (model && !ctx.Serves(*model)) {
    *error = ModelNotFound(*model, ctx);
    return std::nullopt;
  }
  return request;
}

// {"messages": [...], "add_generation_prompt"?, "continue_final_message"?, "tools"?, "chat_template_kwargs"?
// / "reasoning_effort"?}
// -> the ids chat completions would prompt with.
std::optional<std::vector<tokenizer::TokenId>> ChatIds(FieldReader& fields, const ServerContext& ctx) {
  std::optional<nlohmann::json> messages = ReadMessages(fields, ctx.max_messages);
  chat::RenderOptions options;
  ReadThinkingOptions(fields, &options);
  if (const nlohmann::json* tools = fields.Array("tools"); tools != nullptr && !tools->empty())
    options.tools = *tools;
  ReadPromptEnd(fields, &options);
  if (!fields.ok()) return std::nullopt;
  // Image parts count as chat completions count them (the processor's pads), so /tokenize agrees with
  // usage.prompt_tokens.
  std::vector<LoadedImage> images;
  ApiError image_error;
  if (!LoadImages(*messages, ctx, &images, &image_error)) {
    fields.Fail(image_error.param, image_error.message.substr(
                                       std::min(image_error.message.size(), image_error.param.size() + 2)));
    return std::nullopt;
  }
  options.images = RenderImageParts(images);
  Result<chat::RenderedPrompt> rendered = chat::RenderXtml(*ctx.tokenizer, *messages, options);
  if (!rendered.ok()) {
    fields.Fail("messages", rendered.status().message());
    return std::nullopt;
  }
  return std::move(rendered->ids);
}

// A completion prompt's text (kept only for echo when the prompt was token ids).
std::string CompletionPromptText(const tokenizer::Tokenizer& tokenizer, const CompletionPrompt& prompt) {
  if (!prompt.text.empty() || prompt.ids.empty()) return prompt.text;
  const std::vector<tokenizer::TokenId> ids(prompt.ids.begin(), prompt.ids.end());
  Result<std::string> text = tokenizer.Decode(ids);
  return text.ok() ? *text : std::string();
}

}  // namespace

std::optional<std::string> Tokenize(std::string_view body, const ServerContext& ctx, ApiError* error) {
  std::optional<nlohmann::json> request = ParseWithModel(body, ctx, error);
  if (!request) return std::nullopt;
  FieldReader fields(*request, "");
  std::vector<tokenizer::TokenId> ids;
  if (fields.Get("messages") != nullptr) {
    if (auto chat_ids = ChatIds(fields, ctx)) ids = std::move(*chat_ids);
  } else if (const auto prompt = fields.String("prompt")) {
    ids = ctx.tokenizer->Encode(*prompt, tokenizer::SpecialTokens::kAllowed);
  } else if (fields.ok()) {
    fields.Fail("prompt", "required: a `prompt` string or a `messages` array");
  }
  fields.Bool("add_special_tokens");  // K3 adds no BOS: accepted for vLLM compatibility, no effect
  const bool token_strs = fields.Bool("return_token_strs").value_or(false);
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }
  nlohmann::json tokens = nlohmann::json::array();
  nlohmann::json strs = token_strs ? nlohmann::json::array() : nlohmann::json(nullptr);
  for (tokenizer::TokenId id : ids) {
    tokens.push_back(id);
    if (token_strs) strs.push_back(DescribeToken(*ctx.tokenizer, static_cast<int32_t>(id)).text);
  }
  return DumpJson({{"count", ids.size()},
                   {"max_model_len", ctx.max_model_len},
                   {"tokens", std::move(tokens)},
                   {"token_strs", std::move(strs)}});
}

std::optional<std::string> RenderChatCompletion(std::string_view body, const ServerContext& ctx,
                                                std::string_view request_id, ApiError* error) {
  std::optional<ChatPlan> plan = ParseChatCompletion(body, ctx, error);
  if (!plan) return std::nullopt;
  nlohmann::json features = nullptr;
  if (!plan->request.images.empty()) {
    nlohmann::json placeholders = nlohmann::json::array();
    for (const engine::PromptImage& image : plan->request.images)
      placeholders.push_back({{"offset", image.first_pad}, {"length", image.num_pads}});
    features = {{"mm_placeholders", {{"image", std::move(placeholders)}}}};
  }
  return DumpJson({{"request_id", request_id},
                   {"model", plan->model},
                   {"token_ids", plan->request.prompt},
                   {"prompt", std::move(plan->prompt_text)},
                   {"features", std::move(features)},
                   {"stream", plan->stream}});
}

std::optional<std::string> RenderCompletion(std::string_view body, const ServerContext& ctx,
                                            std::string_view request_id, ApiError* error) {
  std::optional<CompletionPlan> plan = ParseCompletion(body, ctx, error);
  if (!plan) return std::nullopt;
  nlohmann::json rendered = nlohmann::json::array();
  for (size_t i = 0; i < plan->prompts.size(); ++i) {
    rendered.push_back({{"request_id", plan->prompts.size() == 1 ? std::string(request_id)
                                                                 : fmt::format("{}-{}", request_id, i)},
                        {"model", plan->model},
                        {"token_ids", plan->prompts[i].ids},
                        {"prompt", CompletionPromptText(*ctx.tokenizer, plan->prompts[i])},
                        {"features", nullptr},
                        {"stream", plan->stream}});
  }
  return DumpJson(rendered);
}

std::optional<std::string> Detokenize(std::string_view body, const ServerContext& ctx, ApiError* error) {
  std::optional<nlohmann::json> request = ParseWithModel(body, ctx, error);
  if (!request) return std::nullopt;
  FieldReader fields(*request, "");
  const nlohmann::json* tokens = fields.Array("tokens");
  if (fields.ok() && tokens == nullptr) fields.Fail("tokens", "required (an array of token ids)");
  std::vector<tokenizer::TokenId> ids;
  const auto max_id = static_cast<int64_t>(ctx.tokenizer->vocab_size()) - 1;
  for (size_t i = 0; fields.ok() && i < tokens->size(); ++i) {
    const auto id = IntegerValue((*tokens)[i], 0, max_id);
    if (!id) {
      fields.Fail(fmt::format("tokens[{}]", i),
                  fmt::format("expected a token id in [0, {}], got {}", max_id, (*tokens)[i].dump()));
    } else {
      ids.push_back(static_cast<tokenizer::TokenId>(*id));
    }
  }
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }
  Result<std::string> text = ctx.tokenizer->Decode(ids);
  if (!text.ok()) {
    *error = FieldError("tokens", text.status().message());
    return std::nullopt;
  }
  return DumpJson({{"prompt", *text}});
}

std::string ModelsBody(const ServerContext& ctx) {
  nlohmann::json data = nlohmann::json::array();
  std::vector<std::string> names = {ctx.served_model_name};
  names.insert(names.end(), ctx.served_model_aliases.begin(), ctx.served_model_aliases.end());
  for (const std::string& name : names) {
    // vLLM's ModelCard carries one permission object; clients that read it find it.
    const nlohmann::json permission = {{"id", "modelperm-" + name},
                                       {"object", "model_permission"},
                                       {"created", ctx.created},
                                       {"allow_create_engine", false},
                                       {"allow_sampling", true},
                                       {"allow_logprobs", true},
                                       {"allow_search_indices", false},
                                       {"allow_view", true},
                                       {"allow_fine_tuning", false},
                                       {"organization", "*"},
                                       {"group", nullptr},
                                       {"is_blocking", false}};
    const nlohmann::json model = {{"id", name},
                                  {"object", "model"},
                                  {"created", ctx.created},
                                  {"owned_by", "k3stack"},
                                  {"root", ctx.served_model_name},
                                  {"parent", nullptr},
                                  {"max_model_len", ctx.max_model_len},
                                  {"permission", nlohmann::json::array({permission})}};
    data.push_back(model);
  }
  return DumpJson({{"object", "list"}, {"data", std::move(data)}});
}

}  // namespace k3::api
