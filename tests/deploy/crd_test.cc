// Every rendered custom resource validates against its full CRD schema from ../shared/schemas, checked by
// an independent validator (valijson, JSON Schema draft 4 — the OpenAPI v3 subset CRDs use).
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "src/deploy/lint_internal.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;

struct Crd {
  std::string group_version;  // "leaderworkerset.x-k8s.io/v1"
  std::string kind;
  Json schema;  // openAPIV3Schema
};

std::string SchemaDir() { return testing::SourceDir() + "/../shared/schemas/"; }

// Loads every served version of a CRD file.
std::vector<Crd> LoadCrds(const std::string& file) {
  std::vector<Crd> out;
  for (const Json& doc : testing::YamlDocsAsJson(testing::ReadTestFile(SchemaDir() + file), file)) {
    const Json& spec = doc["spec"];
    for (const Json& version : spec["versions"]) {
      // Unknown fields are errors, as kubectl's strict field validation reports them.
      Json schema = version["schema"]["openAPIV3Schema"];
      lint::MakeStrict(schema);
      out.push_back({spec["group"].get<std::string>() + "/" + version["name"].get<std::string>(),
                     spec["names"]["kind"].get<std::string>(), schema});
    }
  }
  return out;
}

const std::map<std::string, Crd>& AllCrds() {
  static const auto* crds = [] {
    auto* m = new std::map<std::string, Crd>();
    for (const char* f : {"hyperpod.inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
                          "lws-v0.10.0.leaderworkerset.x-k8s.io_leaderworkersets.yaml",
                          "gaie-v1.6.0.inference.networking.k8s.io_inferencepools.yaml",
                          "gaie-v1.5.0.inference.networking.x-k8s.io_inferenceobjectives.yaml",
                          "kserve-v0.20.0.serving.kserve.io_inferenceservices.yaml"}) {
      for (Crd& crd : LoadCrds(f)) (*m)[crd.group_version + "/" + crd.kind] = std::move(crd);
    }
    return m;
  }();
  return *crds;
}

// Returns "" when valid, else the validator's errors.
std::string Validate(const Json& schema_json, const Json& object) {
  valijson::Schema schema;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_json);
  parser.populateSchema(schema_adapter, schema);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(object);
  if (validator.validate(schema, target, &results)) return "";
  std::string errors;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string context;
    for (const std::string& c : error.context) context += c;
    errors += context + ": " + error.description + "\n";
  }
  return errors;
}

const Crd* CrdFor(const Json& object) {
  auto it = AllCrds().find(object.value("apiVersion", "") + "/" + object.value("kind", ""));
  return it == AllCrds().end() ? nullptr : &it->second;
}

TEST(CrdTest, SchemasLoad) {
  EXPECT_TRUE(AllCrds().count("leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"));
  EXPECT_TRUE(AllCrds().count("inference.sagemaker.aws.amazon.com/v1/InferenceEndpointConfig"));
  EXPECT_TRUE(AllCrds().count("inference.networking.k8s.io/v1/InferencePool"));
  EXPECT_TRUE(AllCrds().count("serving.kserve.io/v1beta1/InferenceService"));
}

TEST(CrdTest, EveryRenderedCustomResourceValidates) {
  int validated = 0;
  std::set<std::string> kinds;
  for (const testing::Combination& c : testing::AllCombinations()) {
    const std::string& target = c.label;
    {
      {
        auto files = testing::RenderCombination(c);
        for (const auto& [path, text] : files) {
          if (path.size() < 5 || path.compare(path.size() - 5, 5, ".yaml") != 0) continue;
          for (const Json& doc : testing::YamlDocsAsJson(text, path)) {
            const Crd* crd = CrdFor(doc);
            if (crd == nullptr) continue;
            EXPECT_EQ(Validate(crd->schema, doc), "") << target << "/" << path << " " << doc["kind"];
            ++validated;
            kinds.insert(doc["kind"]);
          }
        }
      }
    }
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"InferenceEndpointConfig", "LeaderWorkerSet", "InferencePool",
                                          "InferenceObjective", "InferenceService"}));
  EXPECT_GE(validated, 14);
}

TEST(CrdTest, ValidatorRejectsABrokenObject) {
  auto files = testing::RenderFiles("azure-aks", Engine::kVllm);
  Json lws = testing::YamlDocsAsJson(files["kimi-k3-azure.yaml"], "azure")[0];
  const Crd* crd = CrdFor(lws);
  ASSERT_NE(crd, nullptr);
  lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Sometimes";
  EXPECT_NE(Validate(crd->schema, lws), "");
  lws = testing::YamlDocsAsJson(files["kimi-k3-azure.yaml"], "azure")[0];
  lws["spec"]["leaderWorkerTemplate"].erase("workerTemplate");
  EXPECT_NE(Validate(crd->schema, lws), "");

  files = testing::RenderFiles("aws-hyperpod", Engine::kVllm);
  Json iec = testing::YamlDocsAsJson(files["kimi-k3.yaml"], "hyperpod")[0];
  iec["spec"]["modelSourceConfig"]["modelSourceType"] = "ftp";
  EXPECT_NE(Validate(CrdFor(iec)->schema, iec), "");
}

}  // namespace
}  // namespace k3::deploy
