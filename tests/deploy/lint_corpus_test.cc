// Broken-copy corpus for k3 lint (issue 41, item 6): rendered folders of different targets, each copied
// and broken in one way the second dry run found lint missing. Every class of break is made on at least
// two targets; each copy must raise its rule, and the unbroken render must not.
//   K3-GROUP-001  ranks of one group disagree (TP, master port, TP vs group size)
//   K3-SECRET-001 a secret in a plain env value
//   K3-GW-002     gateway objects that match nothing (pool selector, target port, picker Service, route)
//   K3-ENV-001    an environment name the engine's loaders do not read
//   K3-PH-001     an unfilled <PLACEHOLDER> in a file to apply
//   K3-CRD-001    an unknown field under a CRD (--schema-dir, strict as kubectl)
//   K3-ARCH-001   an amd64-only image on a Grace (arm64) pool
#include <functional>

#include <gtest/gtest.h>

#include "src/deploy/lint.h"
#include "src/deploy/yaml_emit.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using Files = std::map<std::string, std::string>;
using Json = nlohmann::json;

struct Break {
  std::string name;
  RenderOptions options;
  std::string file;
  // Edits the file's documents (YAML / JSON), or its text when `text` is set.
  std::function<void(std::vector<Json>&)> docs;
  std::function<void(std::string&)> text;
  std::string rule;
  bool schemas = false;  // lint with --schema-dir ../shared/schemas
};

RenderOptions Opts(const std::string& target, Engine engine, const std::string& weights = "",
                   bool gateway = false, const std::string& instance = "") {
  RenderOptions o = testing::TestRenderOptions(target, engine, weights, gateway);
  if (!instance.empty()) o.plan.instance = instance;
  return o;
}

Json* Kind(std::vector<Json>& docs, const std::string& kind) {
  for (Json& d : docs) {
    if (d.is_object() && d.value("kind", "") == kind) return &d;
  }
  ADD_FAILURE() << "no " << kind;
  static Json none;
  return &none;
}

Json& Leader(std::vector<Json>& docs) {
  return (*Kind(
      docs, "LeaderWorkerSet"))["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0];
}
Json& Worker(std::vector<Json>& docs) {
  return (*Kind(
      docs, "LeaderWorkerSet"))["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0];
}

void SetFlag(Json& container, const std::string& flag, const std::string& value) {
  Json& args = container["args"];
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) {
      args[i + 1] = value;
      return;
    }
  }
  args.push_back(flag);
  args.push_back(value);
}

void AddEnv(Json& container, const std::string& name, const std::string& value) {
  container["env"].push_back({{"name", name}, {"value", value}});
}

void ReplaceOnce(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

std::vector<Break> Corpus() {
  const Engine vllm = Engine::kVllm, k3 = Engine::kK3;
  std::vector<Break> c;
  // K3-GROUP-001
  c.push_back({"aks k3: worker TP differs", Opts("azure-aks", k3), "kimi-k3-azure.yaml",
               [](auto& d) { SetFlag(Worker(d), "--tensor-parallel-size", "4"); }, nullptr, "K3-GROUP-001"});
  c.push_back({"gke k3: worker on another master port", Opts("gcp-gke", k3), "kimi-k3-gcp.yaml",
               [](auto& d) { SetFlag(Worker(d), "--master-port", "29600"); }, nullptr, "K3-GROUP-001"});
  c.push_back({"k8s CPU k3: group size 3 for TP 4", Opts("k8s", k3, "", false, "ecs.re6.26xlarge"),
               "kimi-k3.yaml",
               [](auto& d) { (*Kind(d, "LeaderWorkerSet"))["spec"]["leaderWorkerTemplate"]["size"] = 3; },
               nullptr, "K3-GROUP-001"});
  // K3-SECRET-001
  c.push_back({"eks vllm: AWS secret key in env", Opts("aws-eks", vllm), "kimi-k3-eks.yaml",
               [](auto& d) {
                 AddEnv((*Kind(d, "Deployment"))["spec"]["template"]["spec"]["containers"][0],
                        "AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
               },
               nullptr, "K3-SECRET-001"});
  c.push_back(
      {"pai-eas: OSS secret in the service env", Opts("alibaba-pai-eas", vllm), "service.json",
       [](auto& d) {
         d[0]["containers"][0]["env"].push_back({{"name", "OSS_ACCESS_KEY_SECRET"}, {"value", "s3cr3t"}});
       },
       nullptr, "K3-SECRET-001"});
  c.push_back({"hyperpod: hub token in environmentVariables", Opts("aws-hyperpod", vllm), "kimi-k3.yaml",
               [](auto& d) {
                 (*Kind(d, "InferenceEndpointConfig"))["spec"]["worker"]["environmentVariables"].push_back(
                     {{"name", "HF_TOKEN"}, {"value", "hf_abcdefghijklmnopqrstuvwxyz0123456789"}});
               },
               nullptr, "K3-SECRET-001"});
  // K3-GW-002
  c.push_back({"eks gateway: pool selects no pod", Opts("aws-eks", vllm, "", true), "gateway.yaml",
               [](auto& d) {
                 (*Kind(d, "InferencePool"))["spec"]["selector"]["matchLabels"] = {{"app", "kimi"}};
               },
               nullptr, "K3-GW-002"});
  c.push_back({"gke gateway: picker Service renamed", Opts("gcp-gke", vllm, "", true), "gateway.yaml",
               [](auto& d) { (*Kind(d, "InferencePool"))["spec"]["endpointPickerRef"]["name"] = "epp"; },
               nullptr, "K3-GW-002"});
  c.push_back({"aks gateway: target port 9000", Opts("azure-aks", vllm, "", true), "gateway.yaml",
               [](auto& d) { (*Kind(d, "InferencePool"))["spec"]["targetPorts"][0]["number"] = 9000; },
               nullptr, "K3-GW-002"});
  c.push_back(
      {"k8s gateway: route to a missing pool", Opts("k8s", vllm, "", true), "gateway.yaml",
       [](auto& d) { (*Kind(d, "HTTPRoute"))["spec"]["rules"][0]["backendRefs"][0]["name"] = "kimi"; },
       nullptr, "K3-GW-002"});
  // K3-ENV-001
  c.push_back({"aks k3: misspelt managed identity switch", Opts("azure-aks", k3), "kimi-k3-azure.yaml",
               [](auto& d) { AddEnv(Leader(d), "K3_AZURE_MANAGED_IDENTY", "1"); }, nullptr, "K3-ENV-001"});
  c.push_back({"eks vllm: a k3-only variable", Opts("aws-eks", vllm, "s3://my-bucket/kimi-k3"),
               "kimi-k3-eks.yaml",
               [](auto& d) {
                 AddEnv((*Kind(d, "Deployment"))["spec"]["template"]["spec"]["containers"][0],
                        "K3_S3_PATH_STYLE", "1");
               },
               nullptr, "K3-ENV-001"});
  c.push_back({"gke k3: Azure's account variable", Opts("gcp-gke", k3, "gs://my-bucket/Kimi-K3"),
               "kimi-k3-gcp.yaml", [](auto& d) { AddEnv(Worker(d), "AZURE_STORAGE_ACCOUNT_NAME", "kimi"); },
               nullptr, "K3-ENV-001"});
  // K3-PH-001
  c.push_back({"ack: OSS endpoint region left open", Opts("alibaba-ack", vllm), "weights.yaml", nullptr,
               [](std::string& t) { ReplaceOnce(t, "oss-cn-hangzhou-internal", "oss-<REGION>-internal"); },
               "K3-PH-001"});
  c.push_back({"hyperpod: bucket region left open", Opts("aws-hyperpod", vllm, "s3://my-bucket/kimi-k3"),
               "kimi-k3.yaml", nullptr, [](std::string& t) { ReplaceOnce(t, "us-east-1", "<AWS_REGION>"); },
               "K3-PH-001"});
  c.push_back({"vertex: project id left open", Opts("gcp-vertex", vllm), "deploy-vertex.sh", nullptr,
               [](std::string& t) {
                 ReplaceOnce(t, "PROJECT_ID=${PROJECT_ID:?set PROJECT_ID}", "PROJECT_ID=<PROJECT_ID>");
               },
               "K3-PH-001"});
  // K3-CRD-001 (strict)
  c.push_back({"aks: misspelt LWS field", Opts("azure-aks", vllm), "kimi-k3-azure.yaml",
               [](auto& d) { (*Kind(d, "LeaderWorkerSet"))["spec"]["leaderWorkerTemplate"]["sizee"] = 2; },
               nullptr, "K3-CRD-001", true});
  c.push_back({"hyperpod: unknown worker field", Opts("aws-hyperpod", vllm), "kimi-k3.yaml",
               [](auto& d) { (*Kind(d, "InferenceEndpointConfig"))["spec"]["worker"]["gpus"] = 8; }, nullptr,
               "K3-CRD-001", true});
  c.push_back({"gke gateway: unknown InferencePool field", Opts("gcp-gke", vllm, "", true), "gateway.yaml",
               [](auto& d) { (*Kind(d, "InferencePool"))["spec"]["targetPort"] = 8000; }, nullptr,
               "K3-CRD-001", true});
  // K3-ARCH-001
  c.push_back({"aks GB300: amd64-only image", Opts("azure-aks", vllm), "kimi-k3-azure.yaml", nullptr,
               [](std::string& t) {
                 for (size_t at; (at = t.find("vllm/vllm-openai:kimi-k3")) != std::string::npos;)
                   t.replace(at, 24, "vllm/vllm-openai:v0.11.0-x86_64");
               },
               "K3-ARCH-001"});
  c.push_back({"gke A4X: amd64-only image", Opts("gcp-gke", vllm), "kimi-k3-gcp.yaml", nullptr,
               [](std::string& t) {
                 for (size_t at; (at = t.find("vllm/vllm-openai:kimi-k3")) != std::string::npos;)
                   t.replace(at, 24, "vllm/vllm-openai:v0.11.0-x86_64");
               },
               "K3-ARCH-001"});
  return c;
}

std::vector<Finding> FindingsOf(const Files& files, const std::string& rule, bool schemas) {
  LintOptions o;
  o.catalog = &testing::TestCatalog();
  if (schemas) o.schema_dir = testing::SourceDir() + "/../shared/schemas";
  std::vector<Finding> out;
  for (const Finding& f : LintFiles(files, o)) {
    if (f.rule == rule) out.push_back(f);
  }
  return out;
}

std::string Text(const std::vector<Finding>& findings) { return FormatFindings(findings, false); }

TEST(LintCorpusTest, EveryBrokenCopyRaisesItsRuleAndTheRenderDoesNot) {
  std::map<std::string, std::set<std::string>> targets_per_rule;
  for (const Break& b : Corpus()) {
    auto rendered = Render(testing::TestCatalog(), b.options);
    ASSERT_TRUE(rendered.ok()) << b.name << ": " << rendered.status().ToString();
    Files files;
    for (const RenderedFile& f : *rendered) files[f.path] = f.content;
    ASSERT_TRUE(files.count(b.file)) << b.name << ": no " << b.file;
    EXPECT_TRUE(FindingsOf(files, b.rule, b.schemas).empty())
        << b.name << " (unbroken): " << Text(FindingsOf(files, b.rule, b.schemas));
    Files broken = files;
    if (b.text) {
      b.text(broken[b.file]);
    } else if (b.file.size() > 5 && b.file.substr(b.file.size() - 5) == ".json") {
      std::vector<Json> docs = {Json::parse(broken[b.file])};
      b.docs(docs);
      broken[b.file] = docs[0].dump(2);
    } else {
      std::vector<Json> docs = testing::YamlDocsAsJson(broken[b.file], b.file);
      b.docs(docs);
      std::vector<Doc> out;
      for (const Json& d : docs) out.push_back(Doc::parse(d.dump()));
      broken[b.file] = YamlFile({}, out);
    }
    const std::vector<Finding> found = FindingsOf(broken, b.rule, b.schemas);
    EXPECT_FALSE(found.empty()) << b.name << ": " << b.rule << " not raised";
    for (const Finding& f : found) EXPECT_EQ(f.file, b.file) << b.name;
    targets_per_rule[b.rule].insert(b.options.target);
  }
  for (const auto& [rule, targets] : targets_per_rule) {
    EXPECT_GE(targets.size(), 2u) << rule << " is broken on fewer than two targets";
  }
  EXPECT_EQ(targets_per_rule.size(), 7u);
}

}  // namespace
}  // namespace k3::deploy
