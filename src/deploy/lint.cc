// k3 lint driver: reads files / directories / stdin, parses, runs the built-in kind checks, the rules and the
// optional CRD validation, and formats findings (see lint.h).
#include "src/deploy/lint.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/deploy/lint_internal.h"

namespace k3::deploy {
namespace {

constexpr size_t kMaxInputBytes = 64 << 20;

int LineOfMessage(const std::string& message, const std::string& file) {
  // ParseYamlDocuments messages start with "file:line:".
  if (message.compare(0, file.size() + 1, file + ":") != 0) return 0;
  const size_t start = file.size() + 1;
  const size_t end = message.find(':', start);
  const std::string digits = message.substr(start, end - start);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::stoi(digits);
}

}  // namespace

const char* SeverityName(Severity severity) { return severity == Severity::kWarning ? "warning" : "error"; }

std::vector<Finding> LintDocuments(const std::vector<YamlDocument>& docs, const LintOptions& options) {
  std::vector<Finding> findings;
  lint::Sink sink(findings);
  for (const YamlDocument& doc : docs) {
    lint::CheckKnownKind(doc, sink);
    for (const lint::WorkloadView& w : lint::ExtractWorkloads(doc)) lint::CheckWorkload(w, options, sink);
  }
  lint::CheckServices(docs, sink);
  lint::CheckVolumes(docs, sink);
  lint::CheckGatewayClasses(docs, options, sink);
  lint::CheckGatewayReferences(docs, sink);
  if (!options.schema_dir.empty()) lint::CheckAgainstCrds(docs, options.schema_dir, sink);
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.file, a.line, a.rule) < std::tie(b.file, b.line, b.rule);
  });
  return findings;
}

std::vector<Finding> LintText(const std::string& text, const std::string& file, const LintOptions& options) {
  if (text.size() > kMaxInputBytes) {
    return {{file, 0, "K3-YAML-001", Severity::kError, "larger than 64 MiB", "split the file"}};
  }
  auto docs = ParseYamlDocuments(text, file);
  if (!docs.ok()) {
    const std::string& m = docs.status().message();
    return {
        {file, LineOfMessage(m, file), "K3-YAML-001", Severity::kError, m, "fix the syntax at that line"}};
  }
  std::vector<Finding> findings = LintDocuments(*docs, options);
  lint::Sink sink(findings);
  lint::CheckTextFile(text, file, sink);
  return findings;
}

namespace {

enum class FileKind { kDocuments, kShell, kDockerfile, kOther };

FileKind KindOf(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") return FileKind::kDocuments;
  if (ext == ".sh") return FileKind::kShell;
  if (name.rfind("Dockerfile", 0) == 0) return FileKind::kDockerfile;
  return FileKind::kOther;
}

}  // namespace

std::vector<Finding> LintFiles(const std::map<std::string, std::string>& files, const LintOptions& options) {
  // Documents of one set are linted together, so a Service is checked against its LeaderWorkerSet.
  std::vector<YamlDocument> docs;
  std::vector<Finding> findings;
  lint::Sink sink(findings);
  std::vector<std::pair<std::string, std::string>> dockerfiles;
  for (const auto& [f, text] : files) {
    if (text.size() > kMaxInputBytes) {
      findings.push_back({f, 0, "K3-YAML-001", Severity::kError, "larger than 64 MiB", "split the file"});
      continue;
    }
    switch (KindOf(f)) {
      case FileKind::kShell:
        lint::CheckTextFile(text, f, sink);
        lint::CheckShellScript(text, f, sink);
        continue;
      case FileKind::kDockerfile:
        dockerfiles.emplace_back(f, text);
        continue;
      case FileKind::kOther:
        continue;
      case FileKind::kDocuments:
        break;
    }
    lint::CheckTextFile(text, f, sink);
    auto parsed = ParseYamlDocuments(text, f);
    if (!parsed.ok()) {
      const std::string& m = parsed.status().message();
      findings.push_back(
          {f, LineOfMessage(m, f), "K3-YAML-001", Severity::kError, m, "fix the syntax at that line"});
      continue;
    }
    for (YamlDocument& d : *parsed) docs.push_back(std::move(d));
  }
  lint::CheckDockerfiles(docs, dockerfiles, options, sink);
  for (Finding& f : LintDocuments(docs, options)) findings.push_back(std::move(f));
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.file, a.line, a.rule) < std::tie(b.file, b.line, b.rule);
  });
  return findings;
}

Result<std::vector<Finding>> LintPath(const std::string& path, const LintOptions& options) {
  namespace fs = std::filesystem;
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return LintText(text, "<stdin>", options);
  }
  std::error_code ec;
  std::vector<std::string> names;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::recursive_directory_iterator(path, ec)) {
      if (entry.is_regular_file(ec) && KindOf(entry.path().string()) != FileKind::kOther) {
        names.push_back(entry.path().string());
      }
    }
    if (ec) return IoError("{}: {}", path, ec.message());
  } else if (fs::exists(path, ec)) {
    names.push_back(path);
  } else {
    return NotFound("{}: no such file or directory", path);
  }
  std::map<std::string, std::string> files;
  std::vector<Finding> too_large;
  for (const std::string& f : names) {
    if (fs::file_size(f, ec) > kMaxInputBytes) {
      too_large.push_back({f, 0, "K3-YAML-001", Severity::kError, "larger than 64 MiB", "split the file"});
      continue;
    }
    K3_ASSIGN_OR_RETURN(files[f], ReadFileToString(f));
  }
  std::vector<Finding> findings = LintFiles(files, options);
  findings.insert(findings.begin(), too_large.begin(), too_large.end());
  return findings;
}

bool HasErrors(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == Severity::kError; });
}

std::string FormatFindings(const std::vector<Finding>& findings, bool json) {
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Finding& f : findings) {
      out.push_back({{"file", f.file},
                     {"line", f.line},
                     {"rule", f.rule},
                     {"severity", SeverityName(f.severity)},
                     {"message", f.message},
                     {"fix", f.fix}});
    }
    return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string out;
  for (const Finding& f : findings) {
    out += fmt::format("{}:{}: {} {}: {} (fix: {})\n", f.file, f.line, f.rule, SeverityName(f.severity),
                       f.message, f.fix);
  }
  return out;
}

}  // namespace k3::deploy
