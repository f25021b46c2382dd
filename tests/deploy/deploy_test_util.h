// Helpers shared by the deploy tests: the embedded catalog, rendering a target into a map of files, and
// loading YAML files as JSON documents.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/deploy/catalog.h"
#include "src/deploy/render.h"

namespace k3::deploy::testing {

const Catalog& TestCatalog();

// Options for target x engine (engine k3 gets a test image): kimi-k3, or kimi-linear-48b at 131072 tokens
// where the target refuses kimi-k3 for that engine (a one-instance target, or k3 on alibaba-ack).
RenderOptions TestRenderOptions(const std::string& target, Engine engine, const std::string& weights = "",
                                bool gateway = false);

// False where the renderer refuses the engine outright (k3 on azure-ml / gcp-vertex: no weights volume).
bool Renders(const std::string& target, Engine engine);

// Renders TestRenderOptions(...) into path -> content; fails the test on error.
std::map<std::string, std::string> RenderFiles(const std::string& target, Engine engine,
                                               const std::string& weights = "", bool gateway = false);

// Every target x engine x weights scheme (x --gateway on the Kubernetes targets) the renderer accepts.
struct Combination {
  RenderOptions options;
  std::string label;  // "azure-aks --engine vllm --weights s3://... --gateway --model kimi-k3"
};
std::vector<Combination> AllCombinations();
std::map<std::string, std::string> RenderCombination(const Combination& c);

// The weights URIs tested per target ("" = the default hf:// hub id).
std::vector<std::string> WeightSchemes(const std::string& target);

// Every YAML document of `text` as JSON (fails the test on a parse error).
std::vector<nlohmann::json> YamlDocsAsJson(const std::string& text, const std::string& name);

std::string ReadTestFile(const std::string& path);

// The first document of `kind` in any YAML file of `files` (fails the test when there is none).
nlohmann::json FindDoc(const std::map<std::string, std::string>& files, const std::string& kind);

// The container that serves HTTP: the Deployment's, else the LeaderWorkerSet leader's.
nlohmann::json ServingContainer(const std::map<std::string, std::string>& files);

// K3_SOURCE_DIR (the repository root).
std::string SourceDir();

// Every target id in the catalog.
std::vector<std::string> AllTargets();

}  // namespace k3::deploy::testing
