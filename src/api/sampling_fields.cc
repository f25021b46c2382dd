// OpenAI / vLLM sampling fields -> engine::SamplingParams.
#include "src/api/sampling_fields.h"

#include <algorithm>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "src/api/errors.h"

namespace k3::api {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

void ReadStop(FieldReader& fields, std::vector<std::string>* stop) {
  const nlohmann::json* value = fields.Get("stop");
  if (value == nullptr || !fields.ok()) return;
  if (value->is_string()) {
    if (!value->get_ref<const std::string&>().empty()) stop->push_back(value->get<std::string>());
    return;
  }
  if (!value->is_array()) {
    fields.Fail("stop", std::string("expected a string or an array of strings, got ") + JsonTypeName(*value));
    return;
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const nlohmann::json& item = (*value)[i];
    if (!item.is_string()) {
      fields.Fail(fmt::format("stop[{}]", i), std::string("expected a string, got ") + JsonTypeName(item));
      return;
    }
    if (!item.get_ref<const std::string&>().empty()) stop->push_back(item.get<std::string>());
  }
}

void ReadStopTokenIds(FieldReader& fields, size_t vocab_size, std::vector<int32_t>* ids) {
  const nlohmann::json* value = fields.Array("stop_token_ids");
  if (value == nullptr) return;
  const auto max_id = static_cast<int64_t>(vocab_size) - 1;
  for (size_t i = 0; i < value->size(); ++i) {
    const auto id = IntegerValue((*value)[i], 0, max_id);
    if (!id) {
      fields.Fail(fmt::format("stop_token_ids[{}]", i),
                  fmt::format("expected a token id in [0, {}], got {}", max_id, (*value)[i].dump()));
      return;
    }
    ids->push_back(static_cast<int32_t>(*id));
  }
}

void ReadLogitBias(FieldReader& fields, size_t vocab_size, std::vector<std::pair<int32_t, float>>* bias) {
  const nlohmann::json* value = fields.Object("logit_bias");
  if (value == nullptr) return;
  const auto max_id = static_cast<int64_t>(vocab_size) - 1;
  for (const auto& [key, amount] : value->items()) {
    const std::string path = "logit_bias." + key;
    // Keys are token ids written as decimal strings ("1234"), as OpenAI and vLLM take them.
    int64_t id = -1;
    if (!key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos)
      id = std::stoll(key);
    if (id < 0 || id > max_id) {
      fields.Fail(path, fmt::format("the key must be a token id in [0, {}]", max_id));
      return;
    }
    if (!amount.is_number() || !(amount.get<double>() >= -100.0 && amount.get<double>() <= 100.0)) {
      fields.Fail(path, fmt::format("the bias must be a number in [-100, 100], got {}", amount.dump()));
      return;
    }
    bias->emplace_back(static_cast<int32_t>(id), static_cast<float>(amount.get<double>()));
  }
}

}  // namespace

void ReadSamplingFields(FieldReader& fields, size_t vocab_size, int32_t max_n,
                        engine::SamplingParams* sampling) {
  if (auto v = fields.Number("temperature", 0.0, 100.0)) sampling->temperature = static_cast<float>(*v);
  // vLLM's detokenisation fields, with vLLM's defaults (both true).
  sampling->skip_special_tokens = fields.Bool("skip_special_tokens").value_or(true);
  sampling->spaces_between_special_tokens = fields.Bool("spaces_between_special_tokens").value_or(true);
  if (auto v = fields.Number("top_p", 0.0, 1.0, /*min_exclusive=*/true))
    sampling->top_p = static_cast<float>(*v);
  if (auto v = fields.Int("top_k", -1, kInt32Max)) sampling->top_k = static_cast<int32_t>(*v);
  if (auto v = fields.Number("min_p", 0.0, 1.0)) sampling->min_p = static_cast<float>(*v);
  if (auto v = fields.Number("presence_penalty", -2.0, 2.0))
    sampling->presence_penalty = static_cast<float>(*v);
  if (auto v = fields.Number("frequency_penalty", -2.0, 2.0))
    sampling->frequency_penalty = static_cast<float>(*v);
  if (auto v = fields.Number("repetition_penalty", 0.0, 10.0, /*min_exclusive=*/true))
    sampling->repetition_penalty = static_cast<float>(*v);
  if (auto v = fields.Int("seed", kInt64Min, kInt64Max)) sampling->seed = static_cast<uint64_t>(*v);
  ReadStop(fields, &sampling->stop);
  ReadStopTokenIds(fields, vocab_size, &sampling->stop_token_ids);
  if (auto v = fields.Bool("ignore_eos")) sampling->ignore_eos = *v;
  if (auto v = fields.Int("min_tokens", 0, kInt64Max)) sampling->min_tokens = *v;
  ReadLogitBias(fields, vocab_size, &sampling->logit_bias);
  if (auto v = fields.Int("n", 1, max_n)) sampling->n = static_cast<int32_t>(*v);
}

int64_t DefaultMaxTokens(int64_t default_max_tokens, int64_t prompt_tokens, const ServerContext& ctx) {
  if (ctx.max_model_len <= 0) return default_max_tokens;
  return std::max<int64_t>(1, std::min(default_max_tokens, ctx.max_model_len - prompt_tokens));
}

std::optional<ApiError> ApplyContextLimit(int64_t prompt_tokens, const ServerContext& ctx,
                                          const std::string& prompt_param, engine::SamplingParams* sampling) {
  if (ctx.max_model_len > 0) {
    if (prompt_tokens >= ctx.max_model_len)
      return PromptTooLong(prompt_tokens, ctx.max_model_len, prompt_param);
    const int64_t room = ctx.max_model_len - prompt_tokens;
    if (sampling->max_tokens > room)
      return MaxTokensTooLarge(sampling->max_tokens, prompt_tokens, ctx.max_model_len);
  }
  if (sampling->max_tokens > 0 && sampling->min_tokens > sampling->max_tokens) {
    return FieldError("min_tokens", fmt::format("must not exceed max_tokens ({}), got {}",
                                                sampling->max_tokens, sampling->min_tokens));
  }
  return std::nullopt;
}

}  // namespace k3::api
