// Deploy test helpers (see deploy_test_util.h).
#include "tests/deploy/deploy_test_util.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "src/base/file.h"
#include "src/deploy/yaml_tree.h"

namespace k3::deploy::testing {

const Catalog& TestCatalog() {
  const Result<Catalog>& catalog = EmbeddedCatalog();
  if (!catalog.ok()) {
    ADD_FAILURE() << catalog.status().ToString();
    std::abort();
  }
  return *catalog;
}

std::map<std::string, std::string> RenderFiles(const std::string& target, Engine engine,
                                               const std::string& weights, bool gateway) {
  RenderOptions options;
  options.target = target;
  options.engine = engine;
  options.weights = weights;
  options.gateway = gateway;
  if (engine == Engine::kK3) options.image = "registry.example/k3:test";
  auto files = Render(TestCatalog(), options);
  EXPECT_TRUE(files.ok()) << target << ": " << files.status().ToString();
  std::map<std::string, std::string> out;
  if (!files.ok()) return out;
  for (const RenderedFile& f : *files) out[f.path] = f.content;
  return out;
}

std::vector<nlohmann::json> YamlDocsAsJson(const std::string& text, const std::string& name) {
  auto docs = ParseYamlDocuments(text, name);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  std::vector<nlohmann::json> out;
  if (!docs.ok()) return out;
  for (const YamlDocument& d : *docs) out.push_back(YamlToJson(d.root));
  return out;
}

std::string ReadTestFile(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

std::string SourceDir() {
  const char* dir = std::getenv("K3_SOURCE_DIR");
  return dir != nullptr ? dir : K3_SOURCE_DIR;
}

std::vector<std::string> AllTargets() {
  std::vector<std::string> ids;
  for (const Target& t : TestCatalog().targets) ids.push_back(t.id);
  return ids;
}

}  // namespace k3::deploy::testing
