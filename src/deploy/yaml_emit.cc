// Block-style YAML emitter (see yaml_emit.h).
#include "src/deploy/yaml_emit.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace k3::deploy {
namespace {

bool LooksLikeNonString(const std::string& s) {
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* kWords[] = {"true", "false", "yes",  "no", "on",   "off",
                                 "y",    "n",     "null", "~",  ".inf", ".nan"};
  for (const char* w : kWords) {
    if (lower == w || lower == std::string("-") + w || lower == std::string("+") + w) return true;
  }
  // Numbers in any YAML 1.1/1.2 spelling: digits with signs, dots, exponents, underscores, 0x/0o prefixes,
  // sexagesimal colons. Anything made only of these characters and containing a digit is quoted.
  bool has_digit = false;
  for (char c : lower) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      has_digit = true;
    } else if (std::string_view("+-._:eoxabcdf").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return has_digit;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

bool IsBlockCandidate(const std::string& s) {
  if (s.find('\n') == std::string::npos) return false;
  // Literal blocks cannot carry tabs/control characters or trailing spaces on a line faithfully enough.
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
    if (c == ' ' && (i + 1 == s.size() || s[i + 1] == '\n')) return false;
  }
  return s.front() != ' ' && s.front() != '\n';
}

std::string Scalar(const Doc& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return IsPlainYamlString(s) ? s : Quote(s);
  }
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "null";
  return v.dump();
}

void EmitBlockString(const std::string& s, int indent, std::string& out) {
  const bool trailing_newline = s.back() == '\n';
  const bool extra_newlines = trailing_newline && s.size() > 1 && s[s.size() - 2] == '\n';
  out += extra_newlines ? "|+\n" : (trailing_newline ? "|\n" : "|-\n");
  const std::string pad(indent, ' ');
  size_t start = 0;
  const std::string body = trailing_newline ? s.substr(0, s.size() - 1) : s;
  while (start <= body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(start, end - start);
    out += line.empty() ? "\n" : pad + line + "\n";
    start = end + 1;
  }
}

bool IsEmptyContainer(const Doc& v) { return (v.is_object() || v.is_array()) && v.empty(); }

void EmitNode(const Doc& v, int indent, std::string& out);

// Emits the value that follows "key:" or "- " (the caller has written that prefix).
void EmitValueAfterPrefix(const Doc& v, int indent, std::string& out) {
  if (v.is_object() && !v.empty()) {
    out += "\n";
    EmitNode(v, indent, out);
  } else if (v.is_array() && !v.empty()) {
    out += "\n";
    EmitNode(v, indent, out);
  } else if (IsEmptyContainer(v)) {
    out += v.is_object() ? " {}\n" : " []\n";
  } else if (v.is_string() && IsBlockCandidate(v.get_ref<const std::string&>())) {
    out += " ";
    EmitBlockString(v.get_ref<const std::string&>(), indent, out);
  } else {
    out += " " + Scalar(v) + "\n";
  }
}

void EmitNode(const Doc& v, int indent, std::string& out) {
  const std::string pad(indent, ' ');
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string key = IsPlainYamlString(it.key()) ? it.key() : Quote(it.key());
      out += pad + key + ":";
      EmitValueAfterPrefix(it.value(), indent + 2, out);
    }
  } else if (v.is_array()) {
    for (const Doc& item : v) {
      if (item.is_object() && !item.empty()) {
        // First key on the dash line, the rest aligned under it.
        std::string nested;
        EmitNode(item, indent + 2, nested);
        out += pad + "- " + nested.substr(indent + 2);
      } else if (item.is_array() && !item.empty()) {
        out += pad + "-";
        EmitValueAfterPrefix(item, indent + 2, out);
      } else {
        out += pad + "-";
        EmitValueAfterPrefix(item, indent + 2, out);
      }
    }
  } else {
    out += pad + Scalar(v) + "\n";
  }
}

}  // namespace

bool IsPlainYamlString(const std::string& s) {
  if (s.empty() || s.size() > 1024) return false;
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s.front()) != std::string_view::npos) {
    // "-x" and ":x" style starts are legal in some positions, but quoting is always safe.
    return false;
  }
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return !LooksLikeNonString(s);
}

std::string EmitYaml(const Doc& doc) {
  std::string out;
  if (doc.is_object() || doc.is_array()) {
    if (doc.empty()) return doc.is_object() ? "{}\n" : "[]\n";
    EmitNode(doc, 0, out);
  } else {
    out = Scalar(doc) + "\n";
  }
  return out;
}

}  // namespace k3::deploy
