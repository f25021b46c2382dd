// Validates a JSON value against a JSON Schema (draft 7 as tool `parameters` use it) with valijson; used
// by k3 verify to check tool-call arguments against the schema the request declared.
#pragma once

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace k3::client {

// Ok, or InvalidArgument listing each violation with its path ("<root> [unit]: ...").
Status ValidateAgainstSchema(const nlohmann::json& value, const nlohmann::json& schema);

}  // namespace k3::client
