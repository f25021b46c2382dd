// Prints a Plan as a text table, Markdown or JSON (`k3 plan --format`). Formatting only.
#pragma once

#include <string>

#include "src/base/status.h"
#include "src/deploy/plan.h"

namespace k3::deploy {

enum class PlanFormat { kTable, kMarkdown, kJson, kSentinel };

Result<PlanFormat> ParsePlanFormat(const std::string& name);
std::string FormatPlan(const Plan& plan, PlanFormat format);

// "USD 103,964-103,964 / month" style helpers, shared with render's comments.
std::string FormatUsd(double value);
std::string FormatCostPerHour(const CostRange& cost);
std::string FormatCostPerMonth(const CostRange& cost);
std::string FormatDuration(double seconds);

}  // namespace k3::deploy
