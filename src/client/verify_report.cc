// FormatVerifyReport: table, JSON and JUnit renderings of the checklist.
#include "src/client/verify_report.h"

#include <cstdint>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "src/base/xml_escape.h"

namespace k3::client {
namespace {

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
