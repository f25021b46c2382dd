// POST /v1/embeddings: body -> validated EmbeddingPlan (inputs as token ids), and its engine requests.
#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "src/api/embeddings.h"
#include "src/api/errors.h"
#include "src/api/json_fields.h"
#include "src/api/prompt_list.h"

namespace k3::api {

std::optional<EmbeddingPlan> ParseEmbedding(std::string_view body, const ServerContext& ctx,
                                            ApiError* error) {
  std::optional<nlohmann::json> request = ParseRequestBody(body, error);
  if (!request) return std::nullopt;
  FieldReader fields(*request, "");
  EmbeddingPlan plan;
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
  for (CompletionPrompt& input :
       ReadPromptList(fields, "input", "input", *ctx.tokenizer, /*keep_text=*/false))
    plan.inputs.push_back(std::move(input.ids));
  if (const auto format = fields.String("encoding_format")) {
    if (*format == "base64") {
      plan.base64 = true;
    } else if (*format != "float") {
      fields.Fail("encoding_format", fmt::format("expected \"float\" or \"base64\", got \"{}\"", *format));
    }
  }
  if (fields.Get("dimensions") != nullptr) {
    fields.Fail("dimensions",
                "is not supported: the model has no matryoshka representation, so its embeddings cannot be "
                "shortened (omit the field to get all hidden_size dimensions)");
  }
  fields.String("user");              // accepted, no effect
  fields.Bool("add_special_tokens");  // K3 adds no BOS/EOS: accepted for vLLM compatibility, no effect
  plan.normalize = fields.Bool("normalize").value_or(true);
  const std::optional<int64_t> truncate =
      fields.Int("truncate_prompt_tokens", -1, std::numeric_limits<int64_t>::max());
  if (truncate && *truncate == 0) fields.Fail("truncate_prompt_tokens", "must be -1 or at least 1, got 0");
  if (truncate && *truncate > ctx.max_model_len) {
    fields.Fail("truncate_prompt_tokens",
                fmt::format("is {}, more than max_model_len {}", *truncate, ctx.max_model_len));
  }
  if (fields.Bool("stream").value_or(false)) fields.Fail("stream", "embeddings are not streamed");
  if (!fields.ok()) {
    *error = fields.error();
    return std::nullopt;
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    std::vector<int32_t>& ids = plan.inputs[i];
    if (truncate) {  // keep the last k tokens (vLLM truncates on the left)
      const int64_t keep = *truncate < 0 ? ctx.max_model_len : *truncate;
      if (static_cast<int64_t>(ids.size()) > keep) ids.erase(ids.begin(), ids.end() - keep);
    }
    const auto len = static_cast<int64_t>(ids.size());
    if (len > ctx.max_model_len) {
      *error = PromptTooLong(len, ctx.max_model_len,
                             plan.inputs.size() > 1 ? fmt::format("input[{}]", i) : "input");
      return std::nullopt;
    }
    plan.prompt_tokens += len;
  }
  return plan;
}

std::vector<engine::Request> EmbeddingRequests(const EmbeddingPlan& plan) {
  std::vector<engine::Request> requests(plan.inputs.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].prompt = plan.inputs[i];
    requests[i].embed = true;
    requests[i].embed_normalize = plan.normalize;
  }
  return requests;
}

}  // namespace k3::api
