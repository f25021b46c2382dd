// A JSON value against a JSON Schema, keyword by keyword (see schema_validator.h).
#include "src/chat/schema_validator.h"

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "src/chat/json_text.h"
#include "src/chat/regex_dfa.h"
#include "src/chat/string_schema.h"

namespace k3::chat {
namespace {

using nlohmann::json;

bool IsInteger(const json& value) {
  if (value.is_number_integer()) return true;
  if (!value.is_number_float()) return false;
  const double d = value.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool HasType(const json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "number") return value.is_number();
  if (type == "integer") return IsInteger(value);
  if (type == "string") return value.is_string();
  return false;
}

std::string TypeName(const json& value) {
  if (IsInteger(value)) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

// A non-negative integer keyword (minLength, maxItems, ...), or nullopt when absent or not one.
std::optional<uint64_t> Count(const json& s, const char* key) {
  if (!s.contains(key) || !s[key].is_number_integer() || s[key].get<int64_t>() < 0) return std::nullopt;
  return s[key].get<uint64_t>();
}

size_t CodePoints(const std::string& text) {
  size_t count = 0;
  for (char c : text) count += (static_cast<uint8_t>(c) & 0xC0) != 0x80 ? 1 : 0;
  return count;
}

// A short rendering of a value for messages.
std::string Shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

class Validator {
 public:
  explicit Validator(const json& document) : document_(document) {}

  // `sptr` is the subschema's JSON pointer in the document (for messages), `path` the value's.
  std::optional<SchemaViolation> Check(const json& s, const std::string& sptr, const json& v,
                                       const std::string& path, int depth) {
    if (depth > kMaxValidationDepth || ++steps_ > kMaxValidationSteps) return std::nullopt;
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::nullopt;
      return Violation("false", path, "no value is allowed here (schema false at #" + sptr + ")");
    }
    if (!s.is_object()) return std::nullopt;
    if (auto found = Combinators(s, sptr, v, path, depth)) return found;
    if (auto found = TypeAndValues(s, v, path)) return found;
    if (v.is_string()) return String(s, v.get<std::string>(), path);
    if (v.is_number()) return Number(s, v, path);
    if (v.is_array()) return Array(s, sptr, v, path, depth);
    if (v.is_object()) return Object(s, sptr, v, path, depth);
    return std::nullopt;
  }

 private:
  static SchemaViolation Violation(std::string keyword, const std::string& path, std::string detail) {
    return SchemaViolation{std::move(keyword), path, std::move(detail)};
  }

  bool Valid(const json& s, const std::string& sptr, const json& v, int depth) {
    return !Check(s, sptr, v, "", depth).has_value();
  }

  const json* Resolve(const json& ref) const {
    if (!ref.is_string()) return nullptr;
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#') return nullptr;
    try {
      const json::json_pointer pointer(target.substr(1));
      return document_.contains(pointer) ? &document_.at(pointer) : nullptr;
    } catch (const json::exception&) {
      return nullptr;
    }
  }

  std::optional<SchemaViolation> Combinators(const json& s, const std::string& sptr, const json& v,
                                             const std::string& path, int depth) {
    if (s.contains("$ref")) {
      const json* target = Resolve(s["$ref"]);
      if (target != nullptr) {
        const std::string target_ptr = s["$ref"].get<std::string>().substr(1);
        if (auto found = Check(*target, target_ptr, v, path, depth + 1)) return found;
      }
    }
    if (s.contains("allOf") && s["allOf"].is_array()) {
      const json& all = s["allOf"];
      for (size_t i = 0; i < all.size(); ++i) {
        if (auto found = Check(all[i], sptr + "/allOf/" + std::to_string(i), v, path, depth + 1))
          return found;
      }
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key) || !s[key].is_array() || s[key].empty()) continue;
      const json& alternatives = s[key];
      bool any = false;
      for (size_t i = 0; i < alternatives.size() && !any; ++i) {
        any = Valid(alternatives[i], sptr + "/" + key + "/" + std::to_string(i), v, depth + 1);
      }
      if (!any) {
        return Violation(key, path, fmt::format("matches none of the {} alternatives", alternatives.size()));
      }
    }
    if (s.contains("not") && Valid(s["not"], sptr + "/not", v, depth + 1)) {
      return Violation("not", path, "matches the schema it must not match (#" + sptr + "/not)");
    }
    return std::nullopt;
  }

  static std::optional<SchemaViolation> TypeAndValues(const json& s, const json& v, const std::string& path) {
    if (s.contains("type")) {
      const json& t = s["type"];
      const json list = t.is_array() ? t : json::array({t});
      bool any = false;
      for (const json& type : list) any = any || (type.is_string() && HasType(v, type.get<std::string>()));
      if (!any) return Violation("type", path, fmt::format("is {}, expected {}", TypeName(v), t.dump()));
    }
    if (s.contains("enum") && s["enum"].is_array()) {
      const json& values = s["enum"];
      if (std::find(values.begin(), values.end(), v) == values.end()) {
        return Violation("enum", path, fmt::format("{} is not one of the listed values", Shown(v)));
      }
    }
    if (s.contains("const") && s["const"] != v) {
      return Violation("const", path, fmt::format("{} is not {}", Shown(v), Shown(s["const"])));
    }
    return std::nullopt;
  }

  // A compiled pattern (or format regex), cached; nullptr when it does not compile.
  const regex::ByteDfa* Regex(const std::string& pattern, bool full_match) {
    const std::string key = (full_match ? "F" : "P") + pattern;
    auto [it, inserted] = regexes_.try_emplace(key);
    if (inserted) {
      regex::RegexOptions options;
      options.full_match = full_match;
      options.max_dfa_states = grammar::kMaxStringDfaStates;
      auto dfa = regex::CompileRegex(pattern, options);
      if (dfa.ok()) it->second = std::make_unique<regex::ByteDfa>(std::move(dfa).value());
    }
    return it->second.get();
  }

  std::optional<SchemaViolation> String(const json& s, const std::string& text, const std::string& path) {
    const size_t length = CodePoints(text);
    if (const auto bound = Count(s, "minLength"); bound && length < *bound) {
      return Violation("minLength", path,
                       fmt::format("has {} characters, fewer than {}", length, s["minLength"].dump()));
    }
    if (const auto bound = Count(s, "maxLength"); bound && length > *bound) {
      return Violation("maxLength", path,
                       fmt::format("has {} characters, more than {}", length, s["maxLength"].dump()));
    }
    if (s.contains("pattern") && s["pattern"].is_string()) {
      const regex::ByteDfa* dfa = Regex(s["pattern"].get<std::string>(), /*full_match=*/false);
      if (dfa != nullptr && !dfa->Matches(text)) {
        return Violation("pattern", path,
                         fmt::format("{} does not match /{}/", Shown(text), s["pattern"].get<std::string>()));
      }
    }
    if (s.contains("format") && s["format"].is_string()) {
      const std::string regex_text = grammar::FormatRegex(s["format"].get<std::string>());
      const regex::ByteDfa* dfa = regex_text.empty() ? nullptr : Regex(regex_text, /*full_match=*/true);
      if (dfa != nullptr && !dfa->Matches(text)) {
        return Violation("format", path,
                         fmt::format("{} is not a {}", Shown(text), s["format"].get<std::string>()));
      }
    }
    return std::nullopt;
  }

  static std::optional<SchemaViolation> Number(const json& s, const json& v, const std::string& path) {
    const auto bound = [&](const char* key) { return s.contains(key) && s[key].is_number(); };
    const auto flag = [&](const char* key) {
      return s.contains(key) && s[key].is_boolean() && s[key].get<bool>();
    };
    if (bound("minimum")) {
      const json& m = s["minimum"];
      if (flag("exclusiveMinimum") ? !(m < v) : v < m) {
        return Violation(flag("exclusiveMinimum") ? "exclusiveMinimum" : "minimum", path,
                         fmt::format("{} is below {}", Shown(v), Shown(m)));
      }
    }
    if (bound("maximum")) {
      const json& m = s["maximum"];
      if (flag("exclusiveMaximum") ? !(v < m) : m < v) {
        return Violation(flag("exclusiveMaximum") ? "exclusiveMaximum" : "maximum", path,
                         fmt::format("{} is above {}", Shown(v), Shown(m)));
      }
    }
    if (bound("exclusiveMinimum") && !(s["exclusiveMinimum"] < v)) {
      return Violation("exclusiveMinimum", path,
                       fmt::format("{} is not above {}", Shown(v), Shown(s["exclusiveMinimum"])));
    }
    if (bound("exclusiveMaximum") && !(v < s["exclusiveMaximum"])) {
      return Violation("exclusiveMaximum", path,
                       fmt::format("{} is not below {}", Shown(v), Shown(s["exclusiveMaximum"])));
    }
    if (bound("multipleOf") && s["multipleOf"].get<double>() > 0) {
      const json& m = s["multipleOf"];
      bool multiple = false;
      if (v.is_number_integer() && m.is_number_integer()) {
        multiple = v.get<int64_t>() % m.get<int64_t>() == 0;
      } else {
        const double q = v.get<double>() / m.get<double>();
        multiple = std::isfinite(q) && std::fabs(q - std::round(q)) <= 1e-9 * std::max(1.0, std::fabs(q));
      }
      if (!multiple)
        return Violation("multipleOf", path, fmt::format("{} is not a multiple of {}", Shown(v), Shown(m)));
    }
    return std::nullopt;
  }

  std::optional<SchemaViolation> Array(const json& s, const std::string& sptr, const json& v,
                                       const std::string& path, int depth) {
    const bool tuple_items = s.contains("items") && s["items"].is_array();
    const std::string prefix_key = tuple_items ? "items" : "prefixItems";
    const std::string rest_key = tuple_items ? "additionalItems" : "items";
    size_t prefix = 0;
    if (s.contains(prefix_key) && s[prefix_key].is_array()) {
      const json& schemas = s[prefix_key];
      prefix = schemas.size();
      for (size_t i = 0; i < schemas.size() && i < v.size(); ++i) {
        if (auto found = Check(schemas[i], sptr + "/" + prefix_key + "/" + std::to_string(i), v[i],
                               path + "/" + std::to_string(i), depth + 1)) {
          return found;
        }
      }
    }
    if (s.contains(rest_key)) {
      for (size_t i = prefix; i < v.size(); ++i) {
        if (auto found =
                Check(s[rest_key], sptr + "/" + rest_key, v[i], path + "/" + std::to_string(i), depth + 1)) {
          return found;
        }
      }
    }
    if (const auto bound = Count(s, "minItems"); bound && v.size() < *bound) {
      return Violation("minItems", path,
                       fmt::format("has {} items, fewer than {}", v.size(), s["minItems"].dump()));
    }
    if (const auto bound = Count(s, "maxItems"); bound && v.size() > *bound) {
      return Violation("maxItems", path,
                       fmt::format("has {} items, more than {}", v.size(), s["maxItems"].dump()));
    }
    if (s.contains("uniqueItems") && s["uniqueItems"].is_boolean() && s["uniqueItems"].get<bool>()) {
      for (size_t j = 1; j < v.size(); ++j) {
        for (size_t i = 0; i < j; ++i) {
          if (v[i] == v[j])
            return Violation("uniqueItems", path, fmt::format("items {} and {} are equal", i, j));
        }
      }
    }
    return std::nullopt;
  }

  std::optional<SchemaViolation> Object(const json& s, const std::string& sptr, const json& v,
                                        const std::string& path, int depth) {
    if (s.contains("required") && s["required"].is_array()) {
      for (const json& name : s["required"]) {
        if (name.is_string() && !v.contains(name.get<std::string>())) {
          return Violation("required", path, fmt::format("has no member \"{}\"", name.get<std::string>()));
        }
      }
    }
    const json* properties =
        s.contains("properties") && s["properties"].is_object() ? &s["properties"] : nullptr;
    const json* patterns = s.contains("patternProperties") && s["patternProperties"].is_object()
                               ? &s["patternProperties"]
                               : nullptr;
    for (const auto& [key, member] : v.items()) {
      const std::string member_path = path + "/" + JsonPointerToken(key);
      bool declared = false;
      if (properties != nullptr && properties->contains(key)) {
        declared = true;
        if (auto found = Check((*properties)[key], sptr + "/properties/" + JsonPointerToken(key), member,
                               member_path, depth + 1)) {
          return found;
        }
      }
      if (patterns != nullptr) {
        for (const auto& [pattern, sub] : patterns->items()) {
          const regex::ByteDfa* dfa = Regex(pattern, /*full_match=*/false);
          if (dfa == nullptr || !dfa->Matches(key)) continue;
          declared = true;
          if (auto found = Check(sub, sptr + "/patternProperties/" + JsonPointerToken(pattern), member,
                                 member_path, depth + 1)) {
            return found;
          }
        }
      }
      if (!declared && s.contains("additionalProperties")) {
        const json& additional = s["additionalProperties"];
        if (additional.is_boolean() && !additional.get<bool>()) {
          return Violation("additionalProperties", path,
                           fmt::format("has the undeclared member \"{}\"", key));
        }
        if (auto found = Check(additional, sptr + "/additionalProperties", member, member_path, depth + 1)) {
          return found;
        }
      }
    }
    if (const auto bound = Count(s, "minProperties"); bound && v.size() < *bound) {
      return Violation("minProperties", path,
                       fmt::format("has {} members, fewer than {}", v.size(), s["minProperties"].dump()));
    }
    if (const auto bound = Count(s, "maxProperties"); bound && v.size() > *bound) {
      return Violation("maxProperties", path,
                       fmt::format("has {} members, more than {}", v.size(), s["maxProperties"].dump()));
    }
    return std::nullopt;
  }

  const json& document_;
  int64_t steps_ = 0;  // subschema checks so far (kMaxValidationSteps)
  std::map<std::string, std::unique_ptr<regex::ByteDfa>> regexes_;
};

}  // namespace

std::string SchemaViolation::Message() const {
  return fmt::format("{}: {} {}", keyword, instance_path.empty() ? "/" : instance_path, detail);
}

std::optional<SchemaViolation> FindSchemaViolation(const json& schema, const json& value) {
  return FindSchemaViolation(schema, schema, value);
}

std::optional<SchemaViolation> FindSchemaViolation(const json& document, const json& subschema,
                                                   const json& value) {
  Validator validator(document);
  return validator.Check(subschema, "", value, "", 0);
}

}  // namespace k3::chat
