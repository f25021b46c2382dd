// Generation-config defaults (generation_config.h).
#include "src/api/generation_config.h"

#include <fmt/format.h>

namespace k3::api {
namespace {

// Reads key as a number in [lo, hi] into *out when present (null: absent).
Status ReadNumber(const nlohmann::json& config, const char* key, double lo, double hi,
                  const std::string& source, std::optional<float>* out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return OkStatus();
  if (!it->is_number() || it->get<double>() < lo || it->get<double>() > hi) {
    return InvalidArgument("{}: {} must be a number in [{}, {}], got {}", source, key, lo, hi, it->dump());
  }
  *out = static_cast<float>(it->get<double>());
  return OkStatus();
}

Status ReadInteger(const nlohmann::json& config, const char* key, int64_t lo, int64_t hi,
                   const std::string& source, std::optional<int64_t>* out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return OkStatus();
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
    return InvalidArgument("{}: {} must be an integer in [{}, {}], got {}", source, key, lo, hi, it->dump());
  }
  *out = it->get<int64_t>();
  return OkStatus();
}

}  // namespace

bool SamplingDefaults::empty() const {
  return !temperature && !top_p && !top_k && !min_p && !repetition_penalty && !max_tokens;
}

std::string SamplingDefaults::Describe() const {
  std::string out;
  auto add = [&](const char* name, const std::string& value) {
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", name, value);
  };
  if (temperature) add("temperature", fmt::format("{:g}", *temperature));
  if (top_p) add("top_p", fmt::format("{:g}", *top_p));
  if (top_k) add("top_k", std::to_string(*top_k));
  if (min_p) add("min_p", fmt::format("{:g}", *min_p));
  if (repetition_penalty) add("repetition_penalty", fmt::format("{:g}", *repetition_penalty));
  if (max_tokens) add("max_tokens", std::to_string(*max_tokens));
  return out;
}

Result<SamplingDefaults> ParseGenerationConfig(const nlohmann::json& config, const std::string& source) {
  if (!config.is_object())
    return InvalidArgument("{}: expected a JSON object, got {}", source, config.type_name());
  SamplingDefaults out;
  K3_RETURN_IF_ERROR(ReadNumber(config, "temperature", 0.0, 100.0, source, &out.temperature));
  K3_RETURN_IF_ERROR(ReadNumber(config, "top_p", 1e-9, 1.0, source, &out.top_p));
  K3_RETURN_IF_ERROR(ReadNumber(config, "min_p", 0.0, 1.0, source, &out.min_p));
  K3_RETURN_IF_ERROR(ReadNumber(config, "repetition_penalty", 1e-9, 10.0, source, &out.repetition_penalty));
  std::optional<int64_t> top_k;
  K3_RETURN_IF_ERROR(ReadInteger(config, "top_k", -1, INT32_MAX, source, &top_k));
  if (top_k) out.top_k = static_cast<int32_t>(*top_k);
  K3_RETURN_IF_ERROR(ReadInteger(config, "max_new_tokens", 1, INT64_MAX, source, &out.max_tokens));
  return out;
}

SamplingDefaults MergeSamplingDefaults(const SamplingDefaults& base, const SamplingDefaults& over) {
  SamplingDefaults out = base;
  if (over.temperature) out.temperature = over.temperature;
  if (over.top_p) out.top_p = over.top_p;
  if (over.top_k) out.top_k = over.top_k;
  if (over.min_p) out.min_p = over.min_p;
  if (over.repetition_penalty) out.repetition_penalty = over.repetition_penalty;
  if (over.max_tokens) out.max_tokens = over.max_tokens;
  return out;
}

void ApplySamplingDefaults(const SamplingDefaults& defaults, engine::SamplingParams* sampling) {
  if (defaults.temperature) sampling->temperature = *defaults.temperature;
  if (defaults.top_p) sampling->top_p = *defaults.top_p;
  if (defaults.top_k) sampling->top_k = *defaults.top_k;
  if (defaults.min_p) sampling->min_p = *defaults.min_p;
  if (defaults.repetition_penalty) sampling->repetition_penalty = *defaults.repetition_penalty;
}

}  // namespace k3::api
