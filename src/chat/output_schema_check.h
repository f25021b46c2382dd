// The end check of constrained output: when generation finishes, the JSON reply (or each forced tool
// call's arguments) is checked against its schema for what the grammar left unenforced (`not` over
// arbitrary subschemas, `uniqueItems` over items that are not a small enum; json_schema_grammar.h). A
// violation becomes the choice's finish_reason "schema_violation" with a short stop_reason naming the
// keyword and the path ("uniqueItems: /tags items 0 and 2 are equal"); src/api does that.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace k3::chat {

class OutputSchemaCheck {
 public:
  // The check of a response_format / guided_json schema; nullptr when the schema has no `not` and no
  // `uniqueItems: true` (the grammar then enforced everything).
  static std::shared_ptr<const OutputSchemaCheck> ForJson(const nlohmann::json& schema);
  // The check of forced tool calls (tool_choice required, or named: function_name non-empty) over the
  // request's OpenAI tools array; nullptr when no function's parameters need one.
  static std::shared_ptr<const OutputSchemaCheck> ForToolCalls(const nlohmann::json& tools,
                                                               const std::string& function_name);

  // The violation of a finished JSON reply, as the stop_reason message; nullopt when it holds or is not
  // JSON (a stop string cut it: there is no value to check).
  std::optional<std::string> CheckJson(const std::string& text) const;
  // The same for the arguments (a JSON object text) of call number `index` to function `name`.
  std::optional<std::string> CheckToolCall(const std::string& name, const std::string& arguments,
                                           size_t index) const;

 private:
  nlohmann::json json_schema_;                          // ForJson
  std::map<std::string, nlohmann::json> tool_schemas_;  // ForToolCalls: function name -> parameters
};

// Whether a schema document has a keyword the grammar may leave to the end check: any `not`, or
// `uniqueItems: true`.
bool SchemaHasEndCheckKeywords(const nlohmann::json& schema);

}  // namespace k3::chat
