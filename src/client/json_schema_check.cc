// ValidateAgainstSchema over valijson's nlohmann adapter.
#include "src/client/json_schema_check.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace k3::client {

Status ValidateAgainstSchema(const nlohmann::json& value, const nlohmann::json& schema) {
  valijson::Schema parsed;
  try {
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter schema_adapter(schema);
    parser.populateSchema(schema_adapter, parsed);
  } catch (const std::exception& e) {
    return InvalidArgument("the schema itself is invalid: {}", e.what());
  }
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter value_adapter(value);
  if (validator.validate(parsed, value_adapter, &results)) return OkStatus();
  std::string message;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string path;
    for (const std::string& part : error.context) path += part;
    if (!message.empty()) message += "; ";
    message += path + ": " + error.description;
  }
  return InvalidArgument("{}", message);
}

}  // namespace k3::client
