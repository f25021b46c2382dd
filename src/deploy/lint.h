// k3 lint: checks Kubernetes manifests, HyperPod / KServe / LWS custom resources and PAI-EAS service JSON
// (ours or hand-written) for the mistakes the guide warns about. Each rule has an id, a severity, a message
// and a fix; findings carry file:line. Malformed input is a finding, never a crash.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/deploy/catalog.h"
#include "src/deploy/yaml_tree.h"

namespace k3::deploy {

enum class Severity { kError, kWarning, kSentinel };

struct Finding {
  std::string file;
  int line = 0;
  std::string rule;  // "K3-SHM-001"
  Severity severity = Severity::kError;
  std::string message;
  std::string fix;
};

struct LintOptions {
  std::string schema_dir;  // --schema-dir: CRD files to validate custom resources against
  std::string image_arch;  // --image-arch: amd64 | arm64 | multi (overrides the known-image table)
  double weights_bandwidth_bps = 10e9;  // planned load time = model bytes / bandwidth
  const Catalog* catalog = nullptr;     // for model sizes and instance architectures (may be null)
};

struct RuleInfo {
  const char* id;
  Severity severity;
  const char* summary;
};

// Every rule, in documentation order.
const std::vector<RuleInfo>& LintRules();

// Lints one input (multi-document YAML or JSON). `file` names it in findings.
std::vector<Finding> LintText(const std::string& text, const std::string& file, const LintOptions& options);

// Lints already-parsed documents together (a Service is checked against the LeaderWorkerSets beside it).
std::vector<Finding> LintDocuments(const std::vector<YamlDocument>& docs, const LintOptions& options);

// Lints named files together: *.yaml / *.yml / *.json as documents, *.sh as shell scripts, Dockerfile*
// as engine command lines (`files` maps name -> content).
std::vector<Finding> LintFiles(const std::map<std::string, std::string>& files, const LintOptions& options);

// Lints a file, a directory (every *.yaml, *.yml, *.json, *.sh and Dockerfile below it, sorted) or "-"
// (stdin, as YAML / JSON).
Result<std::vector<Finding>> LintPath(const std::string& path, const LintOptions& options);

// "file:line: RULE severity: message (fix: ...)" lines, or a JSON array.
std::string FormatFindings(const std::vector<Finding>& findings, bool json);
bool HasErrors(const std::vector<Finding>& findings);
const char* SeverityName(Severity severity);

}  // namespace k3::deploy
