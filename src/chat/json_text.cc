// Python-style and compact-sorted JSON writers, XTML attribute escaping.
#include "src/chat/json_text.h"

namespace k3::chat {
namespace {

std::string DumpScalar(const nlohmann::ordered_json& value) {
  // nlohmann writes strings, numbers, booleans and null as Python does with ensure_ascii=False
  // (control characters as \uXXXX or the short escapes, everything else raw).
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

void AppendPythonStyle(const nlohmann::ordered_json& value, std::string& out) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      if (!first) out += ", ";
      first = false;
      out += DumpScalar(nlohmann::ordered_json(key));
      out += ": ";
      AppendPythonStyle(item, out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out += ", ";
      AppendPythonStyle(value[i], out);
    }
    out += ']';
  } else {
    out += DumpScalar(value);
  }
}

void ReplaceAll(std::string& text, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = text.find(from, pos)) != std::string::npos) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
}

}  // namespace

std::string DumpPythonStyle(const nlohmann::ordered_json& value) {
  std::string out;
  AppendPythonStyle(value, out);
  return out;
}

std::string DumpCompactSorted(const nlohmann::json& value) {
  // nlohmann::json keeps objects in a std::map, so dump() is already key-sorted at every level.
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::string EscapeAttribute(std::string_view value) {
  std::string out(value);
  ReplaceAll(out, "&", "&amp;");
  ReplaceAll(out, "\"", "&quot;");
  return out;
}

std::string UnescapeAttribute(std::string_view value) {
  std::string out(value);
  ReplaceAll(out, "&quot;", "\"");
  ReplaceAll(out, "&amp;", "&");
  return out;
}

std::string JsonPointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace k3::chat
