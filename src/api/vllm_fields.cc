// vLLM's extra request fields: guided_json read, the unsupported ones refused (vllm_fields.h).
#include "src/api/vllm_fields.h"

#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace k3::api {
namespace {

constexpr const char* kNoGrammar =
    "is not supported: structured output here takes a JSON schema, a regex or a list of choices "
    "(guided_json, guided_regex, guided_choice)";

// A schema given as an object (or boolean), or as JSON text holding one.
std::optional<nlohmann::json> SchemaValue(FieldReader& fields, const nlohmann::json& value,
                                          const std::string& path) {
  if (value.is_object() || value.is_boolean()) return value;
  if (value.is_string()) {
    nlohmann::json parsed =
        nlohmann::json::parse(value.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() || parsed.is_boolean()) return parsed;
    fields.Fail(path, "expected a JSON schema object (or its JSON text); the string is not one");
    return std::nullopt;
  }
  fields.Fail(path, std::string("expected a JSON schema object, got ") + JsonTypeName(value));
  return std::nullopt;
}

// One guided value: `kind` is "json", "regex" or "choice"; `path` names it in errors.
std::optional<GuidedOutput> GuidedValue(FieldReader& fields, const std::string& kind,
                                        const nlohmann::json& value, const std::string& path) {
  GuidedOutput out;
  out.field = path;
  if (kind == "json") {
    std::optional<nlohmann::json> schema = SchemaValue(fields, value, path);
    if (!schema) return std::nullopt;
    out.schema = std::move(*schema);
    return out;
  }
  if (kind == "regex") {
    if (!value.is_string() || value.get<std::string>().empty()) {
      fields.Fail(path,
                  std::string("expected a non-empty regular expression string, got ") + JsonTypeName(value));
      return std::nullopt;
    }
    out.kind = GuidedOutput::Kind::kRegex;
    out.regex = value.get<std::string>();
    return out;
  }
  if (!value.is_array() || value.empty()) {
    fields.Fail(path, "expected a non-empty array of strings");
    return std::nullopt;
  }
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) {
      fields.Fail(fmt::format("{}[{}]", path, i),
                  std::string("expected a string, got ") + JsonTypeName(value[i]));
      return std::nullopt;
    }
    out.choices.push_back(value[i].get<std::string>());
  }
  out.kind = GuidedOutput::Kind::kChoice;
  return out;
}

}  // namespace

std::optional<GuidedOutput> ReadVllmGuidedFields(FieldReader& fields, bool chat) {
  if (fields.Get("guided_grammar") != nullptr) fields.Fail("guided_grammar", kNoGrammar);
  // (kind, path, value) of every guided field given.
  std::vector<std::tuple<std::string, std::string, const nlohmann::json*>> given;
  for (const char* kind : {"json", "regex", "choice"}) {
    const std::string name = std::string("guided_") + kind;
    if (const nlohmann::json* value = fields.Get(name)) given.emplace_back(kind, name, value);
  }
  if (const nlohmann::json* structured = fields.Object("structured_outputs")) {
    for (const auto& [key, value] : structured->items()) {
      if (value.is_null()) continue;
      const std::string path = "structured_outputs." + key;
      if (key != "json" && key != "regex" && key != "choice") {
        fields.Fail(path, kNoGrammar);
        continue;
      }
      given.emplace_back(key, path, &value);
    }
  }
  if (!fields.ok() || given.empty()) return std::nullopt;
  const auto& [kind, path, value] = given.front();
  if (given.size() > 1) {
    fields.Fail(std::get<1>(given[1]), fmt::format("give one output constraint: {} is set too", path));
    return std::nullopt;
  }
  if (!chat) {
    fields.Fail(path,
                "is supported on /v1/chat/completions only (this server's completions take no output "
                "constraint)");
    return std::nullopt;
  }
  return GuidedValue(fields, kind, *value, path);
}

int32_t ReadPromptLogprobs(FieldReader& fields, bool stream, int32_t max_logprobs) {
  const std::optional<int64_t> k = fields.Int("prompt_logprobs", 0, max_logprobs);
  if (!k.has_value()) return -1;
  if (stream) {
    fields.Fail("prompt_logprobs", "is not available when `stream` is true (as in vLLM)");
    return -1;
  }
  return static_cast<int32_t>(*k);
}

StreamOptions ReadStreamOptions(FieldReader& fields, bool stream) {
  StreamOptions read;
  const nlohmann::json* options = fields.Object("stream_options");
  if (options == nullptr) return read;
  if (!stream) {
    fields.Fail("stream_options", "can only be given when `stream` is true");
    return read;
  }
  FieldReader reader = fields.Nested(*options, "stream_options");
  read.include_usage = reader.Bool("include_usage").value_or(false);
  // vLLM: include_continuous_usage = include_usage and continuous_usage_stats.
  const bool continuous = reader.Bool("continuous_usage_stats").value_or(false);
  read.continuous_usage = read.include_usage && continuous;
  return read;
}

}  // namespace k3::api
