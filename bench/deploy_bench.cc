// deploy_bench: renders every target x engine and lints all of it, the way `k3 render` + `k3 lint` would,
// and reports the wall time (the acceptance bound is < 1 s for everything together). Exits 1 above 1 s.
// Combinations render refuses without more flags (a multi-node group where the target cannot run one, a
// target that needs --weights or --region) are counted and reported, not rendered.
#include <chrono>
#include <cstdio>

#include "src/deploy/lint.h"
#include "src/deploy/render.h"

int main() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto& catalog = k3::deploy::EmbeddedCatalog();
  if (!catalog.ok()) {
    std::fprintf(stderr, "%s\n", catalog.status().ToString().c_str());
    return 1;
  }
  k3::deploy::LintOptions lint_options;
  lint_options.catalog = &*catalog;
  size_t files = 0, bytes = 0, findings = 0, refused = 0;
  for (const auto& target : catalog->targets) {
    for (auto engine : {k3::deploy::Engine::kVllm, k3::deploy::Engine::kK3}) {
      k3::deploy::RenderOptions options;
      options.target = target.id;
      options.engine = engine;
      options.gateway = target.id == "gcp-gke";
      if (engine == k3::deploy::Engine::kK3) options.image = "registry.example/k3:bench";
      if (target.id.rfind("alibaba-", 0) == 0) {  // OSS weights only, and the OSS endpoint's region
        options.weights = "oss://bench-bucket/kimi-k3";
        options.region = "cn-beijing";
      }
      auto rendered = k3::deploy::Render(*catalog, options);
      if (!rendered.ok()) {
        std::fprintf(stderr, "refused (not timed further) %s: %s\n", target.id.c_str(),
                     rendered.status().ToString().c_str());
        ++refused;
        continue;
      }
      std::vector<k3::deploy::YamlDocument> docs;
      for (const auto& f : *rendered) {
        ++files;
        bytes += f.content.size();
        if (f.path.find(".y") == std::string::npos && f.path.find(".json") == std::string::npos) continue;
        auto parsed = k3::deploy::ParseYamlDocuments(f.content, f.path);
        if (!parsed.ok()) return 1;
        for (auto& d : *parsed) docs.push_back(std::move(d));
      }
      findings += k3::deploy::LintDocuments(docs, lint_options).size();
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::printf(
      "deploy_bench: rendered and linted %zu targets x 2 engines (%zu refused without more flags): %zu "
      "files, %zu bytes, %zu findings in %.1f ms (bound 1000 ms)\n",
      catalog->targets.size(), refused, files, bytes, findings, ms);
  return ms < 1000 ? 0 : 1;
}
