// Render: every target x engine renders, output is deterministic, every Kubernetes object carries the
// app.kubernetes.io labels, vLLM gets the guide's canonical arguments, and bad flags are errors.
#include <algorithm>

#include <gtest/gtest.h>

#include "src/deploy/yaml_emit.h"
#include "src/deploy/yaml_tree.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;

bool IsYaml(const std::string& path) {
  return path.size() > 5 &&
         (path.compare(path.size() - 5, 5, ".yaml") == 0 || path.compare(path.size() - 4, 4, ".yml") == 0);
}

TEST(RenderTest, EveryCombinationRendersDeterministically) {
  for (const testing::Combination& c : testing::AllCombinations()) {
    const std::string& target = c.label;
    auto first = testing::RenderCombination(c);
    auto second = testing::RenderCombination(c);
    EXPECT_FALSE(first.empty()) << target;
    EXPECT_EQ(first, second) << target;
    EXPECT_TRUE(first.count("NOTES.md")) << target;
    for (const auto& [path, text] : first) {
      if (IsYaml(path)) {
        EXPECT_FALSE(testing::YamlDocsAsJson(text, path).empty()) << target << "/" << path;
      } else if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
        EXPECT_FALSE(Json::parse(text, nullptr, false).is_discarded()) << target << "/" << path;
      }
    }
  }
}

TEST(RenderTest, K3EngineIsRefusedWhereItCannotRun) {
  for (const char* target : {"azure-ml", "gcp-vertex"}) {
    RenderOptions o = testing::TestRenderOptions(target, Engine::kVllm);
    o.engine = Engine::kK3;
    o.image = "registry.example/k3:test";
    auto r = Render(testing::TestCatalog(), o);
    ASSERT_FALSE(r.ok()) << target;
    EXPECT_NE(r.status().message().find("needs a model directory"), std::string::npos)
        << r.status().message();
  }
}

TEST(RenderTest, EveryKubernetesObjectHasStandardLabels) {
  for (const testing::Combination& c : testing::AllCombinations()) {
    const std::string& target = c.label;
    for (const auto& [path, text] : testing::RenderCombination(c)) {
      if (!IsYaml(path)) continue;
      for (const Json& doc : testing::YamlDocsAsJson(text, path)) {
        if (!doc.contains("apiVersion")) continue;  // Azure ML CLI files are not Kubernetes objects
        const Json& labels = doc["metadata"]["labels"];
        for (const char* key :
             {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
              "app.kubernetes.io/component", "app.kubernetes.io/managed-by"}) {
          EXPECT_TRUE(labels.contains(key))
              << target << "/" << path << " " << doc["kind"] << " lacks " << key;
        }
      }
    }
  }
}

TEST(RenderTest, VllmGetsTheCanonicalArgumentsEverywhere) {
  const std::vector<std::string> canonical = {
      "--trust-remote-code",         "--load-format fastsafetensors",
      "--enable-prefix-caching",     "--enable-auto-tool-choice",
      "--tool-call-parser kimi_k3",  "--reasoning-parser kimi_k3",
      "--served-model-name Kimi-K3", "--moe-backend auto",
      "--tensor-parallel-size 8",    "--no-enable-flashinfer-autotune"};
  // alibaba-pai-eas and alibaba-ack are absent: one 8 x H20 instance cannot hold kimi-k3, and their
  // groups (TP 8 x PP 3) are checked in multinode_test.cc.
  for (const char* target : {"aws-eks", "azure-aks", "gcp-gke", "k8s"}) {
    std::string all;
    for (const auto& [path, text] : testing::RenderFiles(target, Engine::kVllm)) all += text;
    for (const std::string& arg : canonical)
      EXPECT_NE(all.find(arg), std::string::npos) << target << ": " << arg;
    EXPECT_NE(all.find("VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"), std::string::npos) << target;
  }
}

TEST(RenderTest, K3EngineRendersK3ServeOnOneNode) {
  auto files = testing::RenderFiles("aws-eks", Engine::kK3);
  const Json serving = testing::ServingContainer(files);
  EXPECT_EQ(serving["command"][0], "k3");
  EXPECT_EQ(serving["args"][0], "serve");
  EXPECT_EQ(serving["image"], "registry.example/k3:test");
  EXPECT_TRUE(serving.contains("startupProbe"));
}

// --engine k3: the pre-sync Job is `k3 weights sync` from the k3 image on every cloud and for every
// source. Hub weights land in the volume directory `k3 serve` reads; bucket weights are streamed by the
// server from the bucket, and the Job fills that bucket from the hub (no volume anywhere). The account of
// az:// weights is in the URI; the Job and the server use the pods' workload identity.
TEST(RenderTest, K3EnginePresyncIsK3WeightsSyncToWhatTheServerReads) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "hf://moonshotai/Kimi-K3"},
      {"s3://my-bucket/kimi-k3", "hf://moonshotai/Kimi-K3"},
      {"az://kimi/models/Kimi-K3", "hf://moonshotai/Kimi-K3"},
      {"gs://my-bucket/Kimi-K3", "hf://moonshotai/Kimi-K3"}};
  for (const char* target : {"aws-eks", "azure-aks", "gcp-gke", "k8s"}) {
    const std::vector<std::string> schemes = testing::WeightSchemes(target);
    for (const auto& [weights, source] : cases) {
      if (std::find(schemes.begin(), schemes.end(), weights) == schemes.end()) continue;  // another cloud's
      auto files = testing::RenderFiles(target, Engine::kK3, weights);
      Json job;
      for (const Json& doc : testing::YamlDocsAsJson(files["weights.yaml"], "weights.yaml")) {
        if (doc["kind"] == "Job") job = doc;
      }
      ASSERT_TRUE(job.is_object()) << target << " " << weights;
      const Json& c = job["spec"]["template"]["spec"]["containers"][0];
      EXPECT_EQ(c["image"], "registry.example/k3:test") << target;
      EXPECT_EQ(c["command"], Json::array({"k3"})) << target;
      const Json serving = testing::ServingContainer(files);
      std::string model;
      for (size_t i = 0; i + 1 < serving["args"].size(); ++i) {
        if (serving["args"][i] == "--model") model = serving["args"][i + 1];
      }
      const bool streamed = !weights.empty();
      EXPECT_EQ(model, streamed ? weights : "/mnt/models/Kimi-K3") << target;
      EXPECT_EQ(c["args"], Json::array({"weights", "sync", source, model, "--progress", "log"}))
          << target << " " << weights << ": " << c["args"].dump();
      EXPECT_EQ(job["spec"]["template"]["spec"].contains("volumes"), !streamed) << target << " " << weights;
      EXPECT_EQ(files["weights.yaml"].find("PersistentVolumeClaim") != std::string::npos, !streamed);
      EXPECT_EQ(serving.contains("volumeMounts") &&
                    serving["volumeMounts"].dump().find("model-cache") != std::string::npos,
                !streamed)
          << target << " " << weights;
      // az:// and gs:// are read through the pods' workload identity: Job and server run as the
      // ServiceAccount setup-cluster.sh federates (defects2_test.cc Defect205).
      const bool identity = weights.starts_with("az://") || weights.starts_with("gs://");
      EXPECT_EQ(job["spec"]["template"]["spec"].value("serviceAccountName", ""), identity ? "kimi-k3" : "")
          << target << " " << weights;
    }
  }
}

// Several k3 ranks streaming from a bucket are expert parallel (each reads its own experts), on the
// leader and the workers alike; from a volume the group stays tensor parallel.
TEST(RenderTest, K3RanksStreamingFromABucketAreExpertParallel) {
  for (const std::string weights : {"s3://my-bucket/kimi-k3", ""}) {
    RenderOptions o;
    o.target = "k8s";
    o.engine = Engine::kK3;
    o.image = "registry.example/k3:test";
    o.weights = weights;
    o.plan.instance = "ecs.re6.26xlarge";  // a two-node CPU group
    auto files = Render(testing::TestCatalog(), o);
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    int k3_commands = 0;
    for (const RenderedFile& f : *files) {
      if (f.path.ends_with(".yaml") && f.path != "weights.yaml") {
        for (size_t at = f.content.find("--tensor-parallel-size"); at != std::string::npos;
             at = f.content.find("--tensor-parallel-size", at + 1)) {
          ++k3_commands;
          const size_t next = f.content.find("- serve", at);
          const std::string rest =
              f.content.substr(at, next == std::string::npos ? std::string::npos : next - at);
          EXPECT_EQ(rest.find("--enable-expert-parallel") != std::string::npos, !weights.empty())
              << weights << ": " << rest;
        }
      }
    }
    EXPECT_EQ(k3_commands, 2) << weights;  // leader and worker
  }
}

TEST(RenderTest, SingleNodeUsesADeploymentAndMultiNodeAnLws) {
  auto eks = testing::RenderFiles("aws-eks", Engine::kVllm);
  EXPECT_EQ(testing::YamlDocsAsJson(eks["kimi-k3-eks.yaml"], "eks")[0]["kind"], "Deployment");
  RenderOptions options;
  options.target = "aws-eks";
  options.plan.instance = "p5en.48xlarge";  // 8 x H200: two nodes
  auto files = Render(testing::TestCatalog(), options);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  for (const RenderedFile& f : *files) {
    if (f.path == "kimi-k3-eks.yaml") {
      EXPECT_EQ(testing::YamlDocsAsJson(f.content, "eks")[0]["kind"], "LeaderWorkerSet");
    }
  }
}

TEST(RenderTest, BadOptionsAreErrors) {
  RenderOptions o;
  o.target = "nowhere";
  EXPECT_FALSE(Render(testing::TestCatalog(), o).ok());
  o.target = "azure-aks";
  o.engine = Engine::kK3;  // no --image
  auto r = Render(testing::TestCatalog(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--image"), std::string::npos);
  o.engine = Engine::kVllm;
  for (const char* w : {"ftp://x/y", "s3://", "hf://only", "gs://b/p'; rm -rf /", "nothing",
                        "az://account-only", "az://acct/"}) {
    o.weights = w;
    EXPECT_FALSE(Render(testing::TestCatalog(), o).ok()) << w;
  }
  o.weights = "";
  o.target = "aws-hyperpod";
  o.plan.instance = "p5en.48xlarge";  // two instances: HyperPod serves one per replica
  EXPECT_FALSE(Render(testing::TestCatalog(), o).ok());
}

TEST(YamlEmitTest, RoundTripsAwkwardStrings) {
  Doc doc = {{"plain", "abc"},       {"number", "8"},
             {"bool", "true"},       {"colon", "a: b"},
             {"dash", "-c"},         {"multi", "line1\nline2\n"},
             {"empty", ""},          {"hash", "x #y"},
             {"octal", "0o17"},      {"quote", "say \"hi\""},
             {"tab", "a\tb"},        {"null", "~"},
             {"int", 8000},          {"list", Doc::array()},
             {"obj", Doc::object()}, {"nested", {{"a", {1, 2}}}},
             {"trail", "x \ny"},     {"lead", " x\ny"}};
  const std::string yaml = EmitYaml(doc);
  auto parsed = ParseYamlDocuments(yaml, "emit");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << yaml;
  Json back = YamlToJson((*parsed)[0].root);
  EXPECT_EQ(back, Json::parse(doc.dump())) << yaml;
}

}  // namespace
}  // namespace k3::deploy
