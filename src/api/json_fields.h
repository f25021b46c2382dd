// Reading a request body: JSON parsing that never crashes on hostile input (nesting depth checked
// before the DOM is built, invalid UTF-8 and out-of-range numbers rejected by the parser), and
// FieldReader, which reads typed, range-checked fields of one JSON object and records the first error
// as an OpenAI 400 that names the field ("messages[2].content: expected a string or an array").
//
//   FieldReader fields(body, "");
//   auto temperature = fields.Number("temperature", 0, 2);   // nullopt when absent, null or wrong
//   if (!fields.ok()) return fields.error();
// Absent fields and JSON null read as "not given", like vLLM's optional fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/api/openai.h"

namespace k3::api {

inline constexpr int kMaxJsonDepth = 128;

// Parses a request body that must be a JSON object. nullopt: *error is a 400 (invalid JSON, too deep,
// not an object).
std::optional<nlohmann::json> ParseRequestBody(std::string_view body, ApiError* error);

// The deepest nesting of arrays and objects in JSON text (strings skipped); stops counting once
// `limit` is exceeded, so it is linear and never recursive.
int JsonNestingDepth(std::string_view text, int limit);

// A 400 invalid_request_error whose message starts with the field path.
ApiError FieldError(const std::string& path, const std::string& message);

// "string", "number", "boolean", "array", "object" or "null", for error messages.
const char* JsonTypeName(const nlohmann::json& value);

class FieldReader {
 public:
  // `object` must outlive the reader; `path` prefixes field names in errors ("" at the top level).
  FieldReader(const nlohmann::json& object, std::string path);
  // A reader for a nested object whose errors go to this reader (which must outlive it).
  FieldReader Nested(const nlohmann::json& object, std::string path);

  // The field, or nullptr when it is absent or null.
  const nlohmann::json* Get(std::string_view key) const;
  // "path.key" (or "key" at the top level).
  std::string Path(std::string_view key) const;

  std::optional<bool> Bool(std::string_view key);
  std::optional<std::string> String(std::string_view key);
  // A finite number in [min, max] (or (min, max] when min_exclusive).
  std::optional<double> Number(std::string_view key, double min, double max, bool min_exclusive = false);
  // An integer in [min, max]; a float with an integral value (2.0) is accepted, as pydantic does.
  std::optional<int64_t> Int(std::string_view key, int64_t min, int64_t max);
  const nlohmann::json* Object(std::string_view key);
  const nlohmann::json* Array(std::string_view key);

  // Records an error (only the first one is kept).
  void Fail(const std::string& path, const std::string& message);
  bool ok() const { return !sink_->has_value(); }
  const ApiError& error() const { return **sink_; }

 private:
  FieldReader(const nlohmann::json& object, std::string path, std::optional<ApiError>* sink);

  const nlohmann::json& object_;
  std::string path_;
  std::optional<ApiError> error_;
  std::optional<ApiError>* sink_;  // &error_, or the outermost reader's error_
};

// Integer reading for values that are not object fields (array elements): the same rules as
// FieldReader::Int. nullopt when not an integer or out of range.
std::optional<int64_t> IntegerValue(const nlohmann::json& value, int64_t min, int64_t max);

}  // namespace k3::api
