// The end check of constrained output (see output_schema_check.h).
#include "src/chat/output_schema_check.h"

#include <fmt/format.h>

#include "src/chat/schema_validator.h"

namespace k3::chat {

using nlohmann::json;

bool SchemaHasEndCheckKeywords(const json& schema) {
  if (schema.is_array()) {
    for (const json& item : schema) {
      if (SchemaHasEndCheckKeywords(item)) return true;
    }
    return false;
  }
  if (!schema.is_object()) return false;
  for (const auto& [key, value] : schema.items()) {
    if (key == "not" || (key == "uniqueItems" && value == true)) return true;
    if (SchemaHasEndCheckKeywords(value)) return true;
  }
  return false;
}

std::shared_ptr<const OutputSchemaCheck> OutputSchemaCheck::ForJson(const json& schema) {
  if (!SchemaHasEndCheckKeywords(schema)) return nullptr;
  auto check = std::make_shared<OutputSchemaCheck>();
  check->json_schema_ = schema;
  return check;
}

std::shared_ptr<const OutputSchemaCheck> OutputSchemaCheck::ForToolCalls(const json& tools,
                                                                         const std::string& function_name) {
  if (!tools.is_array()) return nullptr;
  auto check = std::make_shared<OutputSchemaCheck>();
  for (const json& tool : tools) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    const json& function = tool["function"];
    if (!function.contains("name") || !function["name"].is_string()) continue;
    const std::string name = function["name"].get<std::string>();
    if (!function_name.empty() && name != function_name) continue;
    const json parameters = function.value("parameters", json());
    if (SchemaHasEndCheckKeywords(parameters)) check->tool_schemas_.emplace(name, parameters);
  }
  if (check->tool_schemas_.empty()) return nullptr;
  return check;
}

std::optional<std::string> OutputSchemaCheck::CheckJson(const std::string& text) const {
  const json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  const std::optional<SchemaViolation> violation = FindSchemaViolation(json_schema_, value);
  if (!violation) return std::nullopt;
  return violation->Message();
}

std::optional<std::string> OutputSchemaCheck::CheckToolCall(const std::string& name,
                                                            const std::string& arguments,
                                                            size_t index) const {
  const auto it = tool_schemas_.find(name);
  if (it == tool_schemas_.end()) return std::nullopt;
  const json value = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  const std::optional<SchemaViolation> violation = FindSchemaViolation(it->second, value);
  if (!violation) return std::nullopt;
  return fmt::format("{} (arguments of tool call {}, {})", violation->Message(), index, name);
}

}  // namespace k3::chat
