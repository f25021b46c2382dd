// Non-throwing JSON serialisation for responses.
#include "src/api/json_dump.h"

namespace k3::api {

std::string DumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::string ValidUtf8(const std::string& text) {
  // Dumping a JSON string with the replace handler applies exactly the U+FFFD substitution; the result
  // is then a quoted, escaped JSON string that parses back to the replaced text.
  const std::string quoted = DumpJson(nlohmann::json(text));
  return nlohmann::json::parse(quoted).get<std::string>();
}

}  // namespace k3::api
