// POST /v1/embeddings: body -> validated EmbeddingPlan (inputs as token ids), and its engine requests.
#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "src/api/embeddings.h"
#include "src/api/errors.h"
#include "src/api/json_fields.h"

namespace k3::api {
namespace {

// One input: a string or an array of token ids. `path` names it in errors.
std::optional<std::vector<int32_t>> ReadOneInput(FieldReader& fields, const nlohmann::json& input,
                                                 const std::string& path,
                                                 const tokenizer::Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  if (input.is_string()) {
    for (tokenizer::TokenId id :
         tokenizer.Encode(input.get<std::string>(), tokenizer::SpecialTokens::kAllowed))
      ids.push_back(static_cast<int32_t>(id));
  } else if (input.is_array()) {
    const auto max_id = static_cast<int64_t>(tokenizer.vocab_size()) - 1;
    for (size_t i = 0; i < input.size(); ++i) {
      const auto id = IntegerValue(input[i], 0, max_id);
      if (!id) {
        fields.Fail(fmt::format("{}[{}]", path, i),
                    fmt::format("expected a token id in [0, {}], got {}", max_id, input[i].dump()));
        return std::nullopt;
      }
      ids.push_back(static_cast<int32_t>(*id));
    }
  } else {
    fields.Fail(path, std::string("expected a string or an array of token ids, got ") + JsonTypeName(input));
    return std::nullopt;
  }
  if (ids.empty()) {
    fields.Fail(path, "must not be empty");
    return std::nullopt;
  }
  return ids;
}

// input: a string, an array of token ids, or a list of strings / token-id arrays.
void ReadInputs(FieldReader& fields, const tokenizer::Tokenizer& tokenizer, EmbeddingPlan* plan) {
  const nlohmann::json* input = fields.Get("input");
  if (!fields.ok()) return;
  if (input == nullptr) {
    fields.Fail("input", "required (a string, an array of token ids, or a list of either)");
    return;
  }
  if (input->is_array() && input->empty()) {
    fields.Fail("input", "must not be empty");
    return;
  }
  const bool batch = input->is_array() && ((*input)[0].is_string() || (*input)[0].is_array());
  if (!batch) {
    if (auto one = ReadOneInput(fields, *input, "input", tokenizer)) plan->inputs.push_back(std::move(*one));
    return;
  }
  if (input->size() > kMaxCompletionPrompts) {
    fields.Fail("input", fmt::format("at most {} inputs per request, got {}; split the batch",
                                     kMaxCompletionPrompts, input->size()));
    return;
  }
  for (size_t i = 0; i < input->size(); ++i) {
    const nlohmann::json& item = (*input)[i];
    const std::string path = fmt::format("input[{}]", i);
    if (!item.is_string() && !item.is_array()) {
      fields.Fail(path, std::string("expected a string or an array of token ids (every input of a list has "
                                    "one of these forms), got ") +
                            JsonTypeName(item));
      return;
    }
    auto one = ReadOneInput(fields, item, path, tokenizer);
    if (!one) return;
    plan->inputs.push_back(std::move(*one));
  }
}

}  // namespace

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
  ReadInputs(fields, *ctx.tokenizer, &plan);
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
