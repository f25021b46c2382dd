// vLLM's extra request fields: guided_json read, the unsupported ones refused (vllm_fields.h).
#include "src/api/vllm_fields.h"

#include <string>

namespace k3::api {
namespace {

constexpr const char* kJsonOnly =
    "is not supported: structured output here takes a JSON schema (guided_json, structured_outputs.json "
    "or response_format)";

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

}  // namespace

std::optional<GuidedSchema> ReadVllmGuidedFields(FieldReader& fields, bool chat) {
  for (const char* name : {"guided_regex", "guided_choice", "guided_grammar"}) {
    if (fields.Get(name) != nullptr) fields.Fail(name, kJsonOnly);
  }
  std::optional<nlohmann::json> schema;
  std::string schema_field;
  if (const nlohmann::json* guided = fields.Get("guided_json")) {
    schema_field = "guided_json";
    schema = SchemaValue(fields, *guided, schema_field);
  }
  if (const nlohmann::json* structured = fields.Object("structured_outputs")) {
    for (const auto& [key, value] : structured->items()) {
      if (value.is_null()) continue;
      const std::string path = "structured_outputs." + key;
      if (key != "json") {
        fields.Fail(path, kJsonOnly);
        continue;
      }
      if (schema.has_value()) {
        fields.Fail(path, "give one schema: guided_json and structured_outputs.json are both set");
        continue;
      }
      schema_field = path;
      schema = SchemaValue(fields, value, path);
    }
  }
  if (schema.has_value() && !chat) {
    fields.Fail(schema_field,
                "is supported on /v1/chat/completions only (this server's completions take no "
                "output constraint)");
    return std::nullopt;
  }
  if (!fields.ok() || !schema.has_value()) return std::nullopt;
  return GuidedSchema{std::move(*schema), std::move(schema_field)};
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

bool ReadStreamOptions(FieldReader& fields, bool stream) {
  const nlohmann::json* options = fields.Object("stream_options");
  if (options == nullptr) return false;
  if (!stream) {
    fields.Fail("stream_options", "can only be given when `stream` is true");
    return false;
  }
  FieldReader reader = fields.Nested(*options, "stream_options");
  const bool include_usage = reader.Bool("include_usage").value_or(false);
  if (reader.Bool("continuous_usage_stats").value_or(false)) {
    reader.Fail(reader.Path("continuous_usage_stats"),
                "is not supported: usage is sent in the last chunk (include_usage)");
  }
  return include_usage;
}

}  // namespace k3::api
