// Renders a VerifyReport as a terminal table, JSON, or JUnit XML (for CI test reporting).
#pragma once

#include <string>

#include "src/base/status.h"
#include "src/client/verify.h"

namespace k3::client {

enum class ReportFormat { kTable, kJson, kJunit };
Result<ReportFormat> ParseReportFormat(const std::string& name);  // "table" | "json" | "junit"

std::string FormatVerifyReport(const VerifyReport& report, ReportFormat format);

}  // namespace k3::client
