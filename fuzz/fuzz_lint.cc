// Fuzzes k3 lint's whole input path: YAML / JSON parsing (yaml-cpp with depth and node limits), the tree
// conversion, the built-in kind checks and every rule; the same bytes also as a cleanup shell script and a
// Dockerfile beside them (the script and cross-file rules). Any input must give findings, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/deploy/lint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const k3::deploy::LintOptions options = [] {
    k3::deploy::LintOptions o;
    const auto& catalog = k3::deploy::EmbeddedCatalog();
    if (catalog.ok()) o.catalog = &*catalog;
    return o;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto findings = k3::deploy::LintText(text, "fuzz.yaml", options);
  (void)k3::deploy::FormatFindings(findings, /*json=*/true);
  const auto files = k3::deploy::LintFiles(
      {{"cleanup.sh", text}, {"Dockerfile", text}, {"deploy-vertex.sh", text}}, options);
  (void)k3::deploy::FormatFindings(files, /*json=*/false);
  return 0;
}
