// The fixed inputs of `k3 verify --suite vendor`: a corpus of tool schemas (each with the prompt that asks
// for a call), the second tool of the tool_choice checks, and the response_format schema. The schemas use
// the keywords real agent tools use (required, enum, additionalProperties false, nested objects, arrays
// with minItems / maxItems, numeric ranges, integer, pattern, anyOf, boolean) and none that only an end
// check can enforce (`not`, `uniqueItems`), so a correct server never has a reason to break one.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3::client {

struct ToolSchemaCase {
  std::string name;     // the function's name; the check is tool-args-<name>
  std::string prompt;   // the user message asking for the call
  nlohmann::json tool;  // {"type": "function", "function": {name, description, parameters}}
};

// The corpus, in check order.
const std::vector<ToolSchemaCase>& ToolSchemaCorpus();

// A second tool for the tool_choice checks (get_time), declared beside the corpus's first.
const nlohmann::json& TimeTool();

// The schema of the response-format check (an object with a string, an integer and an enum).
const nlohmann::json& ResponseFormatSchema();

}  // namespace k3::client
