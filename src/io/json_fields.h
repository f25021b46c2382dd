// JsonFields: typed reads of one JSON object's fields for config parsing, where every failure is an
// InvalidArgument naming the file, the field's JSON path ("text_config.linear_attn_config.num_heads"),
// what was expected, what was found, and the fix. Never throws: types are checked before values are
// read, so a string where a number belongs is an error message, not a nlohmann::json exception.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace k3::io {

// "integer", "number", "string", "boolean", "null", "array", "object".
std::string_view JsonKind(const nlohmann::json& value);
// The value as compact JSON, cut to a readable length (untrusted input goes into messages).
std::string JsonExcerpt(const nlohmann::json& value);

enum class Presence { kRequired, kOptional };  // kOptional: absent or null keeps the default

class JsonFields {
 public:
  // `object` must be a JSON object and outlive this reader. `prefix` is its JSON path plus a dot
  // ("text_config.") or "" for the top level.
  JsonFields(const nlohmann::json& object, std::string prefix, std::string file)
      : object_(object), prefix_(std::move(prefix)), file_(std::move(file)) {}

  // The first of `keys` (a name and its aliases) present, else nullptr; `*used` gets its name.
  const nlohmann::json* Find(std::initializer_list<const char*> keys, std::string* used = nullptr) const;
  bool Has(std::initializer_list<const char*> keys) const;
  // "text_config.hidden_size"
  std::string Path(std::string_view key) const { return prefix_ + std::string(key); }
  const std::string& file() const { return file_; }

  // Each reads the first present key of `keys` into *out, leaving *out unchanged when the field is
  // optional and absent (or null). `what` describes the field for the fix hint ("the residual width D,
  // e.g. 7168").
  Status Int(std::initializer_list<const char*> keys, Presence presence, int64_t min, int64_t max,
             int64_t* out, std::string_view what) const;
  Status Float(std::initializer_list<const char*> keys, Presence presence, float* out,
               std::string_view what) const;
  Status Bool(std::initializer_list<const char*> keys, Presence presence, bool* out,
              std::string_view what) const;
  Status String(std::initializer_list<const char*> keys, Presence presence, std::string* out,
                std::string_view what) const;
  // A list of integers, each within [min, max].
  Status IntList(std::initializer_list<const char*> keys, Presence presence, int64_t min, int64_t max,
                 std::vector<int64_t>* out, std::string_view what) const;
  // A nested object; *out stays null when optional and absent (or null).
  Status Object(std::initializer_list<const char*> keys, Presence presence, const nlohmann::json** out,
                std::string_view what) const;

  // InvalidArgument "FILE: field 'PATH' DETAIL; fix: FIX".
  Status Error(std::string_view key, std::string_view detail, std::string_view fix) const;

 private:
  // Finds the field, or returns the "missing" error / sets *absent for an optional one.
  Status Lookup(std::initializer_list<const char*> keys, Presence presence, std::string_view what,
                const nlohmann::json** value, std::string* used) const;
  Status Integer(const nlohmann::json& value, const std::string& key, int64_t min, int64_t max,
                 std::string_view what, int64_t* out) const;

  const nlohmann::json& object_;
  std::string prefix_;
  std::string file_;
};

}  // namespace k3::io
