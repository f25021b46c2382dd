// FormatVerifyReport: table, JSON and JUnit renderings of the checklist.
#include "src/client/verify_report.h"

#include <cstdint>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace k3::client {
namespace {

// Length of the valid UTF-8 sequence at text[i], or 0 when it is not one (overlong forms, surrogates
// and code points above U+10FFFF are invalid too).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

// XML text or attribute content: markup characters escaped, control characters XML 1.0 forbids
// blanked, and bytes that are not UTF-8 (a snippet of a broken answer) replaced by U+FFFD.
std::string XmlEscape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i++]);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c < 0x20 && c != '\n' && c != '\t') {
          out += ' ';  // not allowed in XML 1.0
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string Table(const VerifyReport& report) {
  std::string out = fmt::format("k3 verify {}  model: {}\n\n", report.endpoint,
                                report.model.empty() ? "(unknown)" : report.model);
  for (const CheckResult& c : report.checks) {
    const char* mark = c.outcome == Outcome::kPass ? "PASS" : c.outcome == Outcome::kFail ? "FAIL" : "SKIP";
    out += fmt::format("  {}  {:<25} {:>8.0f} ms  {}\n", mark, c.id, c.seconds * 1000, c.title);
    if (!c.detail.empty()) out += fmt::format("        {}\n", c.detail);
    if (!c.evidence.empty() && c.outcome != Outcome::kPass)
      out += fmt::format("        evidence: {}\n", c.evidence);
  }
  out += fmt::format("\n{} passed, {} failed, {} skipped\n", report.count(Outcome::kPass), report.failures(),
                     report.count(Outcome::kSkip));
  return out;
}

std::string Json(const VerifyReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const CheckResult& c : report.checks) {
    checks.push_back({{"id", c.id},
                      {"title", c.title},
                      {"outcome", OutcomeName(c.outcome)},
                      {"detail", c.detail},
                      {"evidence", c.evidence},
                      {"seconds", c.seconds}});
  }
  const nlohmann::json out = {{"endpoint", report.endpoint},
                              {"model", report.model},
                              {"passed", report.count(Outcome::kPass)},
                              {"failed", report.failures()},
                              {"skipped", report.count(Outcome::kSkip)},
                              {"checks", checks}};
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string Junit(const VerifyReport& report) {
  double total = 0;
  for (const CheckResult& c : report.checks) total += c.seconds;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites>\n  <testsuite name=\"k3 verify {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n",
      XmlEscape(report.endpoint), report.checks.size(), report.failures(), report.count(Outcome::kSkip),
      total);
  for (const CheckResult& c : report.checks) {
    out += fmt::format("    <testcase classname=\"k3.verify\" name=\"{}\" time=\"{:.3f}\">\n",
                       XmlEscape(c.id), c.seconds);
    if (c.outcome == Outcome::kFail) {
      out += fmt::format("      <failure message=\"{}\">{}</failure>\n", XmlEscape(c.detail),
                         XmlEscape(c.evidence));
    } else if (c.outcome == Outcome::kSkip) {
      out += fmt::format("      <skipped message=\"{}\"/>\n", XmlEscape(c.detail));
    }
    out += fmt::format("      <system-out>{}</system-out>\n",
                       XmlEscape(c.title + ": " + c.detail + "\n" + c.evidence));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace

Result<ReportFormat> ParseReportFormat(const std::string& name) {
  if (name == "table") return ReportFormat::kTable;
  if (name == "json") return ReportFormat::kJson;
  if (name == "junit") return ReportFormat::kJunit;
  return InvalidArgument("--format '{}': expected table, json or junit", name);
}

std::string FormatVerifyReport(const VerifyReport& report, ReportFormat format) {
  switch (format) {
    case ReportFormat::kTable:
      return Table(report);
    case ReportFormat::kJson:
      return Json(report);
    case ReportFormat::kJunit:
      return Junit(report);
  }
  return "";
}

}  // namespace k3::client
