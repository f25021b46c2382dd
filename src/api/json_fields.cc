// Request body parsing and typed field reading with field-naming errors.
#include "src/api/json_fields.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace k3::api {

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

ApiError FieldError(const std::string& path, const std::string& message) {
  ApiError error;
  error.http_status = 400;
  error.message = path.empty() ? message : path + ": " + message;
  error.param = path;
  return error;
}

std::optional<nlohmann::json> ParseRequestBody(std::string_view body, ApiError* error) {
  if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    *error = FieldError(
        "", fmt::format("the request body nests arrays and objects deeper than {} levels", kMaxJsonDepth));
    return std::nullopt;
  }
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    // parse_error (syntax, invalid UTF-8) or out_of_range (number overflow such as 1e999). e.what() is
    // "[json.exception.parse_error.101] parse error at ...": keep the part after the tag.
    std::string what = e.what();
    const size_t tag_end = what.find("] ");
    if (tag_end != std::string::npos) what = what.substr(tag_end + 2);
    *error = FieldError("", "the request body is not valid JSON: " + what);
    return std::nullopt;
  }
  if (!parsed.is_object()) {
    *error =
        FieldError("", std::string("the request body must be a JSON object, got ") + JsonTypeName(parsed));
    return std::nullopt;
  }
  return parsed;
}

const char* JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "number";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::object:
      return "object";
    default:
      return "null";
  }
}

std::optional<int64_t> IntegerValue(const nlohmann::json& value, int64_t min, int64_t max) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (max < 0 || v > static_cast<uint64_t>(max)) return std::nullopt;
    const auto result = static_cast<int64_t>(v);
    return result < min ? std::nullopt : std::optional<int64_t>(result);
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    return v < min || v > max ? std::nullopt : std::optional<int64_t>(v);
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    // 2^63 is the first double outside int64; the range check happens before the cast.
    if (!std::isfinite(v) || std::floor(v) != v || v < -9223372036854775808.0 || v >= 9223372036854775808.0)
      return std::nullopt;
    const auto result = static_cast<int64_t>(v);
    return result < min || result > max ? std::nullopt : std::optional<int64_t>(result);
  }
  return std::nullopt;
}

FieldReader::FieldReader(const nlohmann::json& object, std::string path)
    : object_(object), path_(std::move(path)), sink_(&error_) {}

FieldReader::FieldReader(const nlohmann::json& object, std::string path, std::optional<ApiError>* sink)
    : object_(object), path_(std::move(path)), sink_(sink) {}

FieldReader FieldReader::Nested(const nlohmann::json& object, std::string path) {
  return FieldReader(object, std::move(path), sink_);
}

const nlohmann::json* FieldReader::Get(std::string_view key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

std::string FieldReader::Path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void FieldReader::Fail(const std::string& path, const std::string& message) {
  if (!sink_->has_value()) *sink_ = FieldError(path, message);
}

std::optional<bool> FieldReader::Bool(std::string_view key) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !ok()) return std::nullopt;
  if (!value->is_boolean()) {
    Fail(Path(key), std::string("expected a boolean, got ") + JsonTypeName(*value));
    return std::nullopt;
  }
  return value->get<bool>();
}

std::optional<std::string> FieldReader::String(std::string_view key) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !ok()) return std::nullopt;
  if (!value->is_string()) {
    Fail(Path(key), std::string("expected a string, got ") + JsonTypeName(*value));
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::optional<double> FieldReader::Number(std::string_view key, double min, double max, bool min_exclusive) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !ok()) return std::nullopt;
  if (!value->is_number()) {
    Fail(Path(key), std::string("expected a number, got ") + JsonTypeName(*value));
    return std::nullopt;
  }
  const double v = value->get<double>();
  const bool below = min_exclusive ? !(v > min) : !(v >= min);
  if (!std::isfinite(v) || below || !(v <= max)) {
    Fail(Path(key), fmt::format("must be a number in {}{}, {}], got {}", min_exclusive ? "(" : "[", min, max,
                                value->dump()));
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> FieldReader::Int(std::string_view key, int64_t min, int64_t max) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !ok()) return std::nullopt;
  if (!value->is_number()) {
    Fail(Path(key), std::string("expected an integer, got ") + JsonTypeName(*value));
    return std::nullopt;
  }
  auto v = IntegerValue(*value, min, max);
  if (!v) Fail(Path(key), fmt::format("must be an integer in [{}, {}], got {}", min, max, value->dump()));
  return v;
}

const nlohmann::json* FieldReader::Object(std::string_view key) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !ok()) return nullptr;
  if (!value->is_object()) {
    Fail(Path(key), std::string("expected an object, got ") + JsonTypeName(*value));
    return nullptr;
  }
  return value;
}

const nlohmann::json* FieldReader::Array(std::string_view key) {
  const nlohmann::json* value = Get(key);
  if (value == nullptr || !ok()) return nullptr;
  if (!value->is_array()) {
    Fail(Path(key), std::string("expected an array, got ") + JsonTypeName(*value));
    return nullptr;
  }
  return value;
}

}  // namespace k3::api
