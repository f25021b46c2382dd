// String keywords -> kRegex DFA (see string_schema.h).
#include "src/chat/string_schema.h"

#include <algorithm>

#include "src/chat/grammar_marker_filter.h"
#include "src/chat/regex_parse.h"

namespace k3::chat::grammar {
namespace {

constexpr const char* kDate = "\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|1\\d|2[0-8])";
constexpr const char* kTime =
    "([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,6})?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)";
constexpr const char* kHostLabel = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";

// The marker filter as a ByteFilter (state after the opening quote; every state accepts).
regex::ByteFilter MarkerFilter() {
  regex::ByteFilter filter;
  filter.start = FilterNext(kFilterStart, '"');
  filter.next = [](int32_t state, uint8_t byte) {
    const uint8_t next = FilterNext(static_cast<uint8_t>(state), byte);
    return next == kFilterReject ? -1 : static_cast<int32_t>(next);
  };
  filter.accepting = [](int32_t) { return true; };
  return filter;
}

Result<uint64_t> NonNegativeInteger(const nlohmann::json& schema, const char* keyword,
                                    const std::string& ptr) {
  const nlohmann::json& v = schema[keyword];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0) &&
      !(v.is_number_float() && v.get<double>() >= 0 &&
        v.get<double>() == static_cast<double>(static_cast<uint64_t>(v.get<double>())))) {
    return InvalidArgument("{}: must be a non-negative integer at {}/{}", keyword, ptr, keyword);
  }
  return v.is_number_float() ? static_cast<uint64_t>(v.get<double>()) : v.get<uint64_t>();
}

}  // namespace

std::string FormatRegex(const std::string& format) {
  const std::string label = kHostLabel;
  if (format == "date") return kDate;
  if (format == "time") return kTime;
  if (format == "date-time") return std::string(kDate) + "T" + kTime;
  if (format == "email") {
    return "[A-Za-z0-9_%+-]{1,32}(\\.[A-Za-z0-9_%+-]{1,32})?@" + label + "(\\." + label +
           ")*\\.[A-Za-z]{2,6}";
  }
  if (format == "uuid") {
    return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
  }
  if (format == "ipv4") {
    const std::string octet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
    return octet + "\\." + octet + "\\." + octet + "\\." + octet;
  }
  if (format == "ipv6") return "([0-9a-f]{1,4}:){7}[0-9a-f]{1,4}";  // the full form only (a sound subset)
  if (format == "uri") return "[a-z][a-z0-9+.-]{0,15}:[A-Za-z0-9._~/?#@!$&'()*+,;=:-]{1,64}";
  if (format == "hostname") return label + "(\\." + label + "){0,3}";
  return "";
}

Result<regex::ByteDfa> CompileConstrainedRegex(const std::string& pattern, bool full_match,
                                               const std::string& what, bool json_safe) {
  regex::RegexOptions options;
  options.full_match = full_match;
  options.json_string_safe = json_safe;
  options.max_dfa_states = kMaxStringDfaStates;
  auto dfa = regex::CompileRegex(pattern, options);
  if (!dfa.ok()) return dfa.status().WithPrefix(what);
  return regex::Intersect(*dfa, MarkerFilter(), kMaxStringDfaStates, what);
}

bool HasStringKeywords(const nlohmann::json& schema) {
  if (!schema.is_object()) return false;
  if (schema.contains("format") && schema["format"].is_string() &&
      !FormatRegex(schema["format"].get<std::string>()).empty()) {
    return true;
  }
  return schema.contains("pattern") || schema.contains("minLength") || schema.contains("maxLength");
}

Result<std::shared_ptr<const regex::ByteDfa>> CompileStringKeywords(const nlohmann::json& schema,
                                                                    const std::string& ptr) {
  // Start from "any string" and intersect each keyword's automaton.
  K3_ASSIGN_OR_RETURN(regex::ByteDfa dfa, CompileConstrainedRegex("[\\s\\S]*", true, ptr));
  const auto intersect = [&](const regex::ByteDfa& other, const std::string& what) -> Status {
    K3_ASSIGN_OR_RETURN(dfa, regex::Intersect(dfa, regex::AsFilter(other), kMaxStringDfaStates, what));
    return OkStatus();
  };
  if (schema.contains("pattern")) {
    const std::string at = ptr + "/pattern";
    if (!schema["pattern"].is_string()) return InvalidArgument("pattern: must be a string at {}", at);
    K3_ASSIGN_OR_RETURN(regex::ByteDfa p, CompileConstrainedRegex(schema["pattern"].get<std::string>(), false,
                                                                  "pattern at " + at));
    K3_RETURN_IF_ERROR(intersect(p, "pattern at " + at));
  }
  if (schema.contains("format") && schema["format"].is_string()) {
    const std::string at = ptr + "/format";
    const std::string regex = FormatRegex(schema["format"].get<std::string>());
    if (!regex.empty()) {
      K3_ASSIGN_OR_RETURN(regex::ByteDfa f, CompileConstrainedRegex(regex, true, "format at " + at));
      K3_RETURN_IF_ERROR(intersect(f, "format at " + at));
    }
  }
  if (schema.contains("minLength") || schema.contains("maxLength")) {
    uint64_t min = 0, max = UINT64_MAX;
    if (schema.contains("minLength")) {
      K3_ASSIGN_OR_RETURN(min, NonNegativeInteger(schema, "minLength", ptr));
    }
    if (schema.contains("maxLength")) {
      K3_ASSIGN_OR_RETURN(max, NonNegativeInteger(schema, "maxLength", ptr));
    }
    const std::string at = ptr + (schema.contains("minLength") ? "/minLength" : "/maxLength");
    if (min > regex::kMaxRepeatCount) {
      return InvalidArgument("minLength: above {} is not supported at {}", regex::kMaxRepeatCount, at);
    }
    if (max < min) return std::make_shared<const regex::ByteDfa>();  // no string fits
    const uint64_t generated_max = std::min<uint64_t>(max, std::max<uint64_t>(min, kMaxGeneratedStringChars));
    K3_ASSIGN_OR_RETURN(regex::ByteDfa length,
                        CompileConstrainedRegex(fmt::format("[\\s\\S]{{{},{}}}", min, generated_max), true,
                                                "length at " + at));
    K3_RETURN_IF_ERROR(intersect(length, "minLength / maxLength at " + at));
  }
  return std::make_shared<const regex::ByteDfa>(std::move(dfa));
}

}  // namespace k3::chat::grammar
