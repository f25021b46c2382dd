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

// Renders target x engine (engine k3 gets a test image); fails the test on error.
std::map<std::string, std::string> RenderFiles(const std::string& target, Engine engine,
                                               const std::string& weights = "", bool gateway = false);

// Every YAML document of `text` as JSON (fails the test on a parse error).
std::vector<nlohmann::json> YamlDocsAsJson(const std::string& text, const std::string& name);

std::string ReadTestFile(const std::string& path);

// K3_SOURCE_DIR (the repository root).
std::string SourceDir();

// Every target id in the catalog.
std::vector<std::string> AllTargets();

}  // namespace k3::deploy::testing
