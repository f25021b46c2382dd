// Serialising response JSON without ever throwing: text that is not valid UTF-8 (a model token cut in
// the middle of a character, a user string echoed in an error) is written with U+FFFD replacements
// instead of making nlohmann::json::dump throw.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace k3::api {

std::string DumpJson(const nlohmann::json& value);

// `text` with every ill-formed UTF-8 sequence replaced by U+FFFD.
std::string ValidUtf8(const std::string& text);

}  // namespace k3::api
