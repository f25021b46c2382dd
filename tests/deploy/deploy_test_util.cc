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

RenderOptions TestRenderOptions(const std::string& target, Engine engine, const std::string& weights,
                                bool gateway) {
  RenderOptions options;
  options.target = target;
  options.engine = engine;
  options.weights = weights;
  options.gateway = gateway;
  if (engine == Engine::kK3) options.image = "registry.example/k3:test";
  // The Alibaba targets mount OSS (no hub default), and name the bucket's region like HyperPod's s3.
  const bool alibaba = target == "alibaba-ack" || target == "alibaba-pai-eas";
  if (alibaba && weights.empty()) options.weights = "oss://kimi/Kimi-K3";
  if (alibaba || target == "aws-hyperpod") options.region = alibaba ? "cn-hangzhou" : "us-east-1";
  // Where one serving group of kimi-k3 cannot run as rendered (a one-instance replica; KServe's
  // multi-node predictors), the model that fits one node.
  const bool one_instance = target == "azure-ml" || target == "gcp-vertex" || target == "alibaba-pai-eas";
  if (one_instance || target == "alibaba-ack") {
    options.plan.model = "kimi-linear-48b";
    options.plan.max_model_len = 131072;
  }
  return options;
}

bool Renders(const std::string& target, Engine engine) {
  return !(engine == Engine::kK3 && (target == "azure-ml" || target == "gcp-vertex"));
}

std::vector<std::string> WeightSchemes(const std::string& target) {
  if (target == "aws-hyperpod") return {"", "s3://my-bucket/kimi-k3"};
  if (target == "azure-ml" || target == "gcp-vertex") return {""};
  if (target == "alibaba-ack" || target == "alibaba-pai-eas") return {"oss://kimi/Kimi-K3"};
  // Each cloud's own bucket (its pods' identity reads it); a generic cluster reads s3:// with keys.
  if (target == "azure-aks") return {"", "az://kimi/models/Kimi-K3"};
  if (target == "gcp-gke") return {"", "gs://my-bucket/Kimi-K3"};
  return {"", "s3://my-bucket/kimi-k3"};
}

std::vector<Combination> AllCombinations() {
  std::vector<Combination> out;
  for (const std::string& target : AllTargets()) {
    for (Engine engine : {Engine::kVllm, Engine::kK3}) {
      if (!Renders(target, engine)) continue;
      for (const std::string& weights : WeightSchemes(target)) {
        const bool gateway =
            target == "aws-eks" || target == "azure-aks" || target == "gcp-gke" || target == "k8s";
        for (bool g : gateway ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
          Combination c;
          c.options = TestRenderOptions(target, engine, weights, g);
          c.label = target + " --engine " + EngineName(engine) + " --weights " +
                    (weights.empty() ? "hf://(default)" : weights) + (g ? " --gateway" : "") + " --model " +
                    c.options.plan.model;
          out.push_back(c);
        }
      }
    }
  }
  return out;
}

std::map<std::string, std::string> RenderCombination(const Combination& c) {
  auto files = Render(TestCatalog(), c.options);
  EXPECT_TRUE(files.ok()) << c.label << ": " << files.status().ToString();
  std::map<std::string, std::string> out;
  if (!files.ok()) return out;
  for (const RenderedFile& f : *files) out[f.path] = f.content;
  return out;
}

std::map<std::string, std::string> RenderFiles(const std::string& target, Engine engine,
                                               const std::string& weights, bool gateway) {
  return RenderCombination({TestRenderOptions(target, engine, weights, gateway), target});
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

nlohmann::json FindDoc(const std::map<std::string, std::string>& files, const std::string& kind) {
  for (const auto& [path, text] : files) {
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".yaml") != 0) continue;
    for (nlohmann::json& doc : YamlDocsAsJson(text, path)) {
      if (doc.value("kind", "") == kind) return doc;
    }
  }
  ADD_FAILURE() << "no " << kind << " in the rendered files";
  return nlohmann::json::object();
}

nlohmann::json ServingContainer(const std::map<std::string, std::string>& files) {
  for (const auto& [path, text] : files) {
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".yaml") != 0) continue;
    for (nlohmann::json& doc : YamlDocsAsJson(text, path)) {
      if (doc.value("kind", "") == "Deployment" &&
          doc["metadata"]["labels"].value("app.kubernetes.io/component", "") == "serving") {
        return doc["spec"]["template"]["spec"]["containers"][0];
      }
      if (doc.value("kind", "") == "LeaderWorkerSet") {
        return doc["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0];
      }
    }
  }
  ADD_FAILURE() << "no serving Deployment or LeaderWorkerSet in the rendered files";
  return nlohmann::json::object();
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
