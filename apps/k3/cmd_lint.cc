// k3 lint: checks manifests (files, directories or stdin) for the deployment mistakes the guide warns about.
// Flags -> deploy::LintPath -> findings on stdout; exit 1 when any finding is an error.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/k3/commands.h"
#include "src/deploy/lint.h"
#include "src/deploy/plan.h"

namespace k3::app {

void RegisterLintCommand(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    std::string format = "text";
    std::string schema_dir;
    std::string image_arch;
    std::string bandwidth = "10Gbps";
    bool list_rules = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("lint", "Check manifests for known deployment mistakes (file, dir or -)");
  cmd->add_option("paths", flags->paths, "FILE | DIR | - (stdin)");
  cmd->add_option("--format", flags->format, "text | json")->capture_default_str();
  cmd->add_option("--schema-dir", flags->schema_dir, "validate custom resources against these CRD files");
  cmd->add_option("--image-arch", flags->image_arch,
                  "amd64 | arm64 | multi: architectures of the images used");
  cmd->add_option("--weights-bandwidth", flags->bandwidth,
                  "planned weight read bandwidth (probe budget rule)")
      ->capture_default_str();
  cmd->add_flag("--rules", flags->list_rules, "list the rules and exit");
  cmd->callback([flags] {
    if (flags->list_rules) {
      for (const auto& r : deploy::LintRules()) {
        std::printf("%-15s %-8s %s\n", r.id, deploy::SeverityName(r.severity), r.summary);
      }
      return;
    }
    if (flags->paths.empty()) return FailCommand("lint", "give a FILE, a DIR or - (stdin)", 2);
    if (flags->format != "text" && flags->format != "json") {
      return FailCommand("lint", "--format '" + flags->format + "': one of text, json", 2);
    }
    if (!flags->image_arch.empty() && flags->image_arch != "amd64" && flags->image_arch != "arm64" &&
        flags->image_arch != "multi") {
      return FailCommand("lint", "--image-arch '" + flags->image_arch + "': one of amd64, arm64, multi", 2);
    }
    deploy::LintOptions options;
    options.schema_dir = flags->schema_dir;
    options.image_arch = flags->image_arch;
    auto bandwidth = deploy::ParseBandwidth(flags->bandwidth);
    if (!bandwidth.ok()) return FailCommand("lint", bandwidth.status().message(), 2);
    options.weights_bandwidth_bps = *bandwidth;
    const auto& catalog = deploy::EmbeddedCatalog();
    if (catalog.ok()) options.catalog = &*catalog;
    std::vector<deploy::Finding> all;
    for (const std::string& path : flags->paths) {
      auto findings = deploy::LintPath(path, options);
      if (!findings.ok()) return FailCommand("lint", findings.status().message(), 2);
      all.insert(all.end(), findings->begin(), findings->end());
    }
    std::fputs(deploy::FormatFindings(all, flags->format == "json").c_str(), stdout);
    if (deploy::HasErrors(all)) CommandExitCode() = 1;
  });
}

}  // namespace k3::app
