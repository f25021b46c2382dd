// JsonFields: typed, path-naming reads of config.json fields (see json_fields.h).
#include "src/io/json_fields.h"

#include <cmath>
#include <limits>

namespace k3::io {

using nlohmann::json;

std::string_view JsonKind(const json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_boolean()) return "boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "array";
  if (value.is_object()) return "object";
  return "value";
}

std::string JsonExcerpt(const json& value) {
  constexpr size_t kMaxChars = 60;
  std::string text = value.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

const json* JsonFields::Find(std::initializer_list<const char*> keys, std::string* used) const {
  for (const char* key : keys) {
    auto it = object_.find(key);
    if (it != object_.end()) {
      if (used != nullptr) *used = key;
      return &*it;
    }
  }
  return nullptr;
}

bool JsonFields::Has(std::initializer_list<const char*> keys) const {
  const json* value = Find(keys);
  return value != nullptr && !value->is_null();
}

Status JsonFields::Error(std::string_view key, std::string_view detail, std::string_view fix) const {
  return InvalidArgument("{}: field '{}' {}; fix: {}", file_, Path(key), detail, fix);
}

Status JsonFields::Lookup(std::initializer_list<const char*> keys, Presence presence, std::string_view what,
                          const json** value, std::string* used) const {
  *value = Find(keys, used);
  if (*value != nullptr && !(*value)->is_null()) return OkStatus();
  *value = nullptr;
  if (presence == Presence::kOptional) return OkStatus();
  std::string names;
  for (const char* key : keys) names += fmt::format("{}'{}'", names.empty() ? "" : " or ", Path(key));
  return InvalidArgument("{}: required field {} is {}; fix: add it ({})", file_, names,
                         Find(keys) == nullptr ? "missing" : "null", what);
}

Status JsonFields::Integer(const json& value, const std::string& key, int64_t min, int64_t max,
                           std::string_view what, int64_t* out) const {
  if (!value.is_number_integer()) {
    return Error(key, fmt::format("must be an integer, found {} {}", JsonKind(value), JsonExcerpt(value)),
                 fmt::format("write a JSON integer ({})", what));
  }
  const bool too_big = value.is_number_unsigned() &&
                       value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const int64_t v = too_big ? std::numeric_limits<int64_t>::max() : value.get<int64_t>();
  if (too_big || v < min || v > max) {
    return Error(key, fmt::format("must be in [{}, {}], found {}", min, max, JsonExcerpt(value)),
                 fmt::format("correct the value ({})", what));
  }
  *out = v;
  return OkStatus();
}

Status JsonFields::Int(std::initializer_list<const char*> keys, Presence presence, int64_t min, int64_t max,
                       int64_t* out, std::string_view what) const {
  const json* value;
  std::string key;
  K3_RETURN_IF_ERROR(Lookup(keys, presence, what, &value, &key));
  if (value == nullptr) return OkStatus();
  return Integer(*value, key, min, max, what, out);
}

Status JsonFields::Float(std::initializer_list<const char*> keys, Presence presence, float* out,
                         std::string_view what) const {
  const json* value;
  std::string key;
  K3_RETURN_IF_ERROR(Lookup(keys, presence, what, &value, &key));
  if (value == nullptr) return OkStatus();
  if (!value->is_number()) {
    return Error(key, fmt::format("must be a number, found {} {}", JsonKind(*value), JsonExcerpt(*value)),
                 fmt::format("write a JSON number ({})", what));
  }
  const double v = value->get<double>();
  if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) {
    return Error(key, fmt::format("must be a finite float32 value, found {}", JsonExcerpt(*value)),
                 fmt::format("correct the value ({})", what));
  }
  *out = static_cast<float>(v);
  return OkStatus();
}

Status JsonFields::Bool(std::initializer_list<const char*> keys, Presence presence, bool* out,
                        std::string_view what) const {
  const json* value;
  std::string key;
  K3_RETURN_IF_ERROR(Lookup(keys, presence, what, &value, &key));
  if (value == nullptr) return OkStatus();
  if (!value->is_boolean()) {
    return Error(key,
                 fmt::format("must be true or false, found {} {}", JsonKind(*value), JsonExcerpt(*value)),
                 fmt::format("write a JSON boolean ({})", what));
  }
  *out = value->get<bool>();
  return OkStatus();
}

Status JsonFields::String(std::initializer_list<const char*> keys, Presence presence, std::string* out,
                          std::string_view what) const {
  const json* value;
  std::string key;
  K3_RETURN_IF_ERROR(Lookup(keys, presence, what, &value, &key));
  if (value == nullptr) return OkStatus();
  if (!value->is_string()) {
    return Error(key, fmt::format("must be a string, found {} {}", JsonKind(*value), JsonExcerpt(*value)),
                 fmt::format("write a JSON string ({})", what));
  }
  *out = value->get<std::string>();
  return OkStatus();
}

Status JsonFields::IntList(std::initializer_list<const char*> keys, Presence presence, int64_t min,
                           int64_t max, std::vector<int64_t>* out, std::string_view what) const {
  const json* value;
  std::string key;
  K3_RETURN_IF_ERROR(Lookup(keys, presence, what, &value, &key));
  if (value == nullptr) return OkStatus();
  if (!value->is_array()) {
    return Error(
        key, fmt::format("must be a list of integers, found {} {}", JsonKind(*value), JsonExcerpt(*value)),
        fmt::format("write a JSON array of integers ({})", what));
  }
  std::vector<int64_t> list;
  list.reserve(value->size());
  for (size_t i = 0; i < value->size(); ++i) {
    int64_t v = 0;
    K3_RETURN_IF_ERROR(Integer((*value)[i], fmt::format("{}[{}]", key, i), min, max, what, &v));
    list.push_back(v);
  }
  *out = std::move(list);
  return OkStatus();
}

Status JsonFields::Object(std::initializer_list<const char*> keys, Presence presence, const json** out,
                          std::string_view what) const {
  const json* value;
  std::string key;
  K3_RETURN_IF_ERROR(Lookup(keys, presence, what, &value, &key));
  *out = nullptr;
  if (value == nullptr) return OkStatus();
  if (!value->is_object()) {
    return Error(key, fmt::format("must be an object, found {} {}", JsonKind(*value), JsonExcerpt(*value)),
                 fmt::format("write a JSON object ({})", what));
  }
  *out = value;
  return OkStatus();
}

}  // namespace k3::io
