// k3 lint: each rule fires on a crafted bad manifest (one test per rule) and stays quiet on the good one;
// everything k3 render produces passes; malformed input is reported with file:line.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "src/deploy/lint.h"
#include "src/deploy/yaml_tree.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

LintOptions Options() {
  LintOptions o;
  o.catalog = &testing::TestCatalog();
  return o;
}

std::vector<std::string> Rules(const std::vector<Finding>& findings) {
  std::vector<std::string> ids;
  for (const Finding& f : findings) ids.push_back(f.rule);
  return ids;
}

bool Has(const std::vector<Finding>& findings, const std::string& rule) {
  for (const Finding& f : findings) {
    if (f.rule == rule) return true;
  }
  return false;
}

// A good two-node LWS + Service, written by hand (amd64-safe image so no architecture warning).
const char* kGoodLws = R"yaml(apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: kimi-k3
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    restartPolicy: RecreateGroupOnPodRestart
    leaderTemplate:
      metadata:
        labels:
          role: leader
      spec:
        nodeSelector:
          agentpool: gb300pool
        containers:
          - name: vllm-leader
            image: vllm/vllm-openai:latest
            command: ["/bin/bash", "-c"]
            args:
              - |
                bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE);
                vllm serve moonshotai/Kimi-K3 --trust-remote-code --load-format fastsafetensors --enable-auto-tool-choice --tool-call-parser kimi_k3 --reasoning-parser kimi_k3 --served-model-name Kimi-K3 --tensor-parallel-size 8 --port 8000
            env:
              - name: VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION
                value: "1"
              - name: HF_HOME
                value: /mnt/models
              - name: NCCL_SOCKET_IFNAME
                value: eth0
            resources:
              limits:
                nvidia.com/gpu: "4"
              requests:
                nvidia.com/gpu: "4"
            startupProbe:
              httpGet:
                path: /health
                port: 8000
              periodSeconds: 30
              failureThreshold: 104
            volumeMounts:
              - name: model-cache
                mountPath: /mnt/models
              - name: dshm
                mountPath: /dev/shm
        volumes:
          - name: model-cache
            persistentVolumeClaim:
              claimName: kimi-k3-weights
          - name: dshm
            emptyDir:
              medium: Memory
              sizeLimit: 64Gi
    workerTemplate:
      spec:
        nodeSelector:
          agentpool: gb300pool
        containers:
          - name: vllm-worker
            image: vllm/vllm-openai:latest
            args: ["bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker --ray_address=$(LWS_LEADER_ADDRESS)"]
            env:
              - name: NCCL_SOCKET_IFNAME
                value: eth0
            resources:
              limits:
                nvidia.com/gpu: "4"
            volumeMounts:
              - name: dshm
                mountPath: /dev/shm
        volumes:
          - name: dshm
            emptyDir:
              medium: Memory
              sizeLimit: 64Gi
---
apiVersion: v1
kind: Service
metadata:
  name: kimi-k3-svc
spec:
  type: LoadBalancer
  selector:
    leaderworkerset.sigs.k8s.io/name: kimi-k3
    role: leader
  ports:
    - port: 8000
      targetPort: 8000
)yaml";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

std::vector<Finding> Lint(const std::string& text, LintOptions o = Options()) {
  return LintText(text, "m.yaml", o);
}

TEST(LintTest, GoodManifestIsClean) {
  auto findings = Lint(kGoodLws);
  EXPECT_TRUE(findings.empty()) << FormatFindings(findings, false);
}

TEST(LintRuleTest, LoadFormatIsAWeightFormat) {
  auto f = Lint(Replace(kGoodLws, "--load-format fastsafetensors", "--load-format mxfp4"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-LOAD-001"}) << FormatFindings(f, false);
  EXPECT_EQ(f[0].line, 18);  // the container
}

TEST(LintRuleTest, ArmNodesWithAmd64Image) {
  auto f = Lint(Replace(Replace(kGoodLws, "vllm/vllm-openai:latest", "vllm/vllm-openai:v1-x86_64"),
                        "vllm/vllm-openai:latest", "vllm/vllm-openai:v1-x86_64"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-ARCH-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, ArmNodesWithUnknownImageWarnsUnlessOverridden) {
  const std::string text = Replace(Replace(kGoodLws, "vllm/vllm-openai:latest", "vllm/vllm-openai:kimi-k3"),
                                   "vllm/vllm-openai:latest", "vllm/vllm-openai:kimi-k3");
  auto f = Lint(text);
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-ARCH-002"});
  EXPECT_FALSE(HasErrors(f));
  LintOptions o = Options();
  o.image_arch = "multi";
  EXPECT_TRUE(Lint(text, o).empty());
}

TEST(LintRuleTest, ParallelismDiffersFromGroupGpus) {
  auto f = Lint(
      Replace(kGoodLws, "--tensor-parallel-size 8", "--tensor-parallel-size 8 --pipeline-parallel-size 2"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-PAR-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, TensorParallelAboveOneNodeWithoutMultiNode) {
  const std::string deployment = R"yaml(apiVersion: apps/v1
kind: Deployment
metadata:
  name: k3
spec:
  selector:
    matchLabels: {app: k3}
  template:
    metadata:
      labels: {app: k3}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
          args: ["vllm serve /models/Kimi-K3 --load-format fastsafetensors --tool-call-parser kimi_k3 --reasoning-parser kimi_k3 --tensor-parallel-size 8"]
          env:
            - name: VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION
              value: "1"
          resources:
            limits: {nvidia.com/gpu: 4}
          volumeMounts:
            - {name: dshm, mountPath: /dev/shm}
      volumes:
        - name: dshm
          emptyDir: {medium: Memory}
)yaml";
  auto f = Lint(deployment);
  EXPECT_EQ(Rules(f), (std::vector<std::string>{"K3-PAR-001", "K3-PAR-002"})) << FormatFindings(f, false);
}

TEST(LintRuleTest, GpuRequestsDifferFromLimits) {
  auto f = Lint(Replace(kGoodLws, "requests:\n                nvidia.com/gpu: \"4\"",
                        "requests:\n                nvidia.com/gpu: \"2\""));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-GPU-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, KimiK3WithoutParsers) {
  auto f = Lint(Replace(kGoodLws, "--tool-call-parser kimi_k3", "--tool-call-parser hermes"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-MODEL-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, KimiK3WithoutEnvironmentVariable) {
  auto f = Lint(Replace(kGoodLws, "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION\n                value: \"1\"",
                        "VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION\n                value: \"0\""));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-MODEL-002"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, ProbeBudgetShorterThanLoad) {
  auto f = Lint(Replace(kGoodLws, "failureThreshold: 104", "failureThreshold: 20"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-PROBE-001"}) << FormatFindings(f, false);
  EXPECT_EQ(f[0].line, 37);  // the startupProbe key
  // The same budget passes when the weights come in at 100 Gbps.
  LintOptions fast = Options();
  fast.weights_bandwidth_bps = 100e9;
  EXPECT_TRUE(Lint(Replace(kGoodLws, "failureThreshold: 104", "failureThreshold: 20"), fast).empty());
}

TEST(LintRuleTest, SharedMemoryMissingOrSmall) {
  auto missing =
      Lint(Replace(kGoodLws,
                   "              - name: dshm\n                mountPath: /dev/shm\n        volumes:\n"
                   "          - name: dshm",
                   "        volumes:\n          - name: dshm"));
  EXPECT_EQ(Rules(missing), std::vector<std::string>{"K3-SHM-001"}) << FormatFindings(missing, false);
  auto small = Lint(Replace(kGoodLws, "sizeLimit: 64Gi", "sizeLimit: 1Gi"));
  EXPECT_EQ(Rules(small), std::vector<std::string>{"K3-SHM-002"}) << FormatFindings(small, false);
}

TEST(LintRuleTest, LwsRestartPolicy) {
  auto f = Lint(Replace(kGoodLws, "restartPolicy: RecreateGroupOnPodRestart", "restartPolicy: None"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-LWS-001"}) << FormatFindings(f, false);
  EXPECT_EQ(f[0].line, 9);
}

TEST(LintRuleTest, ServiceMustSelectOnlyTheLeader) {
  auto f = Lint(Replace(kGoodLws, "    role: leader\n  ports:", "  ports:"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-SVC-001"}) << FormatFindings(f, false);
  auto none = Lint(Replace(kGoodLws, "    role: leader\n  ports:", "    role: head\n  ports:"));
  EXPECT_EQ(Rules(none), std::vector<std::string>{"K3-SVC-001"}) << FormatFindings(none, false);
}

TEST(LintRuleTest, Gb300NodePoolAbove18) {
  auto f = Lint(Replace(kGoodLws, "  replicas: 1\n", "  replicas: 10\n"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-POOL-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, HyperPodInstanceTypeWithoutMlPrefix) {
  auto files = testing::RenderFiles("aws-hyperpod", Engine::kVllm);
  const std::string good = files["kimi-k3.yaml"];
  EXPECT_TRUE(Lint(good).empty()) << FormatFindings(Lint(good), false);
  auto f = Lint(Replace(good, "instanceType: ml.p6-b300.48xlarge", "instanceType: p6-b300.48xlarge"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-HP-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, HubPullWithoutCacheVolume) {
  auto f =
      Lint(Replace(kGoodLws, "                value: /mnt/models\n", "                value: /tmp/hf\n"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-WEIGHTS-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, MultiNodeWithoutNcclInterface) {
  auto f = Lint(
      Replace(Replace(kGoodLws, "NCCL_SOCKET_IFNAME", "NCCL_DEBUG"), "NCCL_SOCKET_IFNAME", "NCCL_DEBUG"));
  EXPECT_EQ(Rules(f), std::vector<std::string>{"K3-NET-001"}) << FormatFindings(f, false);
}

TEST(LintRuleTest, KnownKindFieldsTypesAndEnums) {
  auto f = Lint(Replace(kGoodLws, "    size: 2\n", "    size: two\n"));
  // A non-integer size is a schema error (and the group size falls back to 1 for the other rules).
  EXPECT_TRUE(Has(f, "K3-SCHEMA-001")) << FormatFindings(f, false);
  auto missing = Lint(Replace(kGoodLws, "    workerTemplate:\n", "    workerTemplatx:\n"));
  EXPECT_TRUE(Has(missing, "K3-SCHEMA-001"));
  auto env = Lint(Replace(kGoodLws, "value: \"1\"", "value: 1"));
  EXPECT_EQ(Rules(env), std::vector<std::string>{"K3-SCHEMA-001"}) << FormatFindings(env, false);
}

TEST(LintRuleTest, SchemaDirValidatesCustomResources) {
  // A schema dir holding only the LeaderWorkerSet CRD (the full KServe CRD is 2 MB and slow under ASan).
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("k3_lint_crds_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(
      testing::SourceDir() + "/../shared/schemas/lws-v0.10.0.leaderworkerset.x-k8s.io_leaderworkersets.yaml",
      dir / "lws.yaml", std::filesystem::copy_options::overwrite_existing);
  LintOptions o = Options();
  o.schema_dir = dir.string();
  EXPECT_TRUE(Lint(kGoodLws, o).empty()) << FormatFindings(Lint(kGoodLws, o), false);
  auto f = Lint(Replace(kGoodLws, "restartPolicy: RecreateGroupOnPodRestart", "restartPolicy: Sometimes"), o);
  EXPECT_TRUE(Has(f, "K3-CRD-001")) << FormatFindings(f, false);
  for (const Finding& finding : f) {
    if (finding.rule == "K3-CRD-001") {
      EXPECT_EQ(finding.line, 9);
    }
  }
  const std::vector<std::string> ids = Rules(f);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "K3-CRD-001"), 1) << FormatFindings(f, false);
  std::filesystem::remove_all(dir);
}

TEST(LintTest, EverythingRenderProducesPasses) {
  // Every file of every combination, linted together as `k3 lint DIR` does: manifests, JSON, scripts and
  // Dockerfiles.
  for (const testing::Combination& c : testing::AllCombinations()) {
    LintOptions o = Options();
    // Full CRD validation of every target is crd_test's job; here once, through lint's own --schema-dir
    // path.
    if (c.options.target == "gcp-gke" && c.options.engine == Engine::kVllm && c.options.gateway &&
        c.options.weights.empty())
      o.schema_dir = testing::SourceDir() + "/../shared/schemas";
    for (const Finding& finding : LintFiles(testing::RenderCombination(c), o)) {
      // The only finding allowed: the guide's own caveat that kimi-k3's arm64 variant must be checked.
      EXPECT_EQ(finding.rule, "K3-ARCH-002") << c.label << ": " << FormatFindings({finding}, false);
    }
  }
}

TEST(LintTest, MalformedInputIsReportedWithLine) {
  auto f = LintText("apiVersion: v1\nkind: Service\nmetadata: {name: [x\n", "bad.yaml", Options());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "K3-YAML-001");
  EXPECT_EQ(f[0].file, "bad.yaml");
  EXPECT_GE(f[0].line, 3);
  const std::string text = FormatFindings(f, false);
  EXPECT_EQ(text.rfind("bad.yaml:", 0), 0u) << text;
  // Nesting bombs and alias bombs are refused, not expanded.
  EXPECT_EQ(LintText(std::string(100000, '['), "deep.yaml", Options())[0].rule, "K3-YAML-001");
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'k'; ++c, ++prev) {
    bomb += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  auto b = LintText(bomb, "bomb.yaml", Options());
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].rule, "K3-YAML-001");
}

// The input shape behind issue #5's fuzz_lint out-of-memory: 3 KB whose aliases stand for a million copies
// of a 3,000-byte scalar (3 GB once copied into the tree). It is refused by the counting pass, before
// anything is expanded.
std::string LongScalarAliasBomb() {
  std::string bomb = "a: &a \"" + std::string(3000, 'x') + "\"\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'g'; ++c, ++prev) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i == 0 ? "*" : ", *") + prev;
    bomb += "]\n";
  }
  return bomb;
}

TEST(LintTest, AliasBombOfLongScalarsIsRefusedBeforeExpanding) {
  const std::string bomb = LongScalarAliasBomb();
  ASSERT_LT(bomb.size(), 4000u);
  auto f = LintText(bomb, "bomb.yaml", Options());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "K3-YAML-001");
  EXPECT_EQ(f[0].file, "bomb.yaml");
  EXPECT_GT(f[0].line, 1);
  EXPECT_NE(f[0].message.find("64 MiB of text (after alias expansion)"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].message.rfind("bomb.yaml:", 0), 0u) << f[0].message;
}

TEST(YamlTreeTest, AliasesExpandToCopiesOfTheAnchor) {
  auto docs = ParseYamlDocuments("base: &b {x: 1, y: [1, 2]}\nuse: *b\n---\nz: &b [1]\nq: *b\n", "a.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  ASSERT_NE((*docs)[0].root.Get("use"), nullptr);
  EXPECT_EQ(YamlToJson(*(*docs)[0].root.Get("use")), nlohmann::json::parse(R"({"x": 1, "y": [1, 2]})"));
  ASSERT_NE((*docs)[1].root.Get("q"), nullptr);  // anchors restart per document: *b is the second &b
  EXPECT_EQ(YamlToJson(*(*docs)[1].root.Get("q")), nlohmann::json::parse("[1]"));
}

TEST(YamlTreeTest, LimitsCountTheExpandedTree) {
  const std::string text = "a: &a [1, 2, 3]\nb: [*a, *a]\n";  // 1 + (1 + 4) + (1 + 1 + 2*4) = 16 nodes
  YamlLimits limits;
  limits.max_alias_nodes = 8;
  EXPECT_TRUE(ParseYamlDocuments(text, "a.yaml", limits).ok());
  limits.max_alias_nodes = 7;
  auto r = ParseYamlDocuments(text, "a.yaml", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      "a.yaml:2: aliases (here *a) expand to more than 7 nodes, the limit for aliases; refusing to lint "
      "(an alias bomb?)");

  limits = YamlLimits();
  limits.max_nodes = 16;
  EXPECT_TRUE(ParseYamlDocuments(text, "a.yaml", limits).ok());
  limits.max_nodes = 15;
  r = ParseYamlDocuments(text, "a.yaml", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than 15 nodes"), std::string::npos) << r.status().message();

  limits = YamlLimits();
  limits.max_text_bytes = 4u << 20;
  const std::string big = "a: &a " + std::string(1u << 20, 'x') + "\nb: [*a, *a, *a]\n";
  r = ParseYamlDocuments(big, "big.yaml", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "big.yaml:2: more than 4 MiB of text (after alias expansion); refusing to lint");

  // Depth counts through aliases: *a's tree is 3 levels below b's list.
  limits = YamlLimits();
  limits.max_depth = 3;
  EXPECT_TRUE(ParseYamlDocuments("a: &a [[1]]\nb: *a\n", "d.yaml", limits).ok());
  r = ParseYamlDocuments("a: &a [[1]]\nb: [*a]\n", "d.yaml", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nesting deeper than 3 levels"), std::string::npos);
}

// yaml-cpp 0.7 reports empty documents at the ',' forever; YAML::LoadAll alone would fill memory (this was
// the input shape fuzz_lint ran out of memory on in CI).
TEST(YamlTreeTest, StuckParserIsRefused) {
  for (const char* text : {"{},", "[],", "{}, a", "a: 1\n---\n{},\n"}) {
    auto r = ParseYamlDocuments(text, "s.yaml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("the parser is stuck"), std::string::npos) << r.status().message();
  }
  auto f = LintText("a: 1\n---\n{},\n", "s.yaml", Options());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "K3-YAML-001");
  EXPECT_EQ(f[0].line, 3);
  // Empty documents are fine: each starts at its own "---".
  auto docs = ParseYamlDocuments("a: 1\n---\n---\n---\nb: 2\n", "e.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ(docs->size(), 2u);
}

TEST(YamlTreeTest, AliasInsideItsOwnAnchorIsACycle) {
  auto r = ParseYamlDocuments("x: 1\na: &a [1, *a, *a]\n", "c.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "c.yaml:2: alias *a refers to a node that contains it (a cycle)");
  EXPECT_EQ(LintText("a: &a {b: *a}\n", "c.yaml", Options())[0].line, 1);
}

TEST(LintTest, JsonOutputAndPaiEasServiceJson) {
  // PAI-EAS renders a model that fits one instance (kimi-linear-48b); served under K3's name, the same
  // JSON lacks K3's parsers and environment.
  auto files = testing::RenderFiles("alibaba-pai-eas", Engine::kVllm);
  EXPECT_TRUE(Lint(files["service.json"]).empty());
  auto bad = Lint(Replace(files["service.json"], "--served-model-name Kimi-Linear-48B-A3B",
                          "--served-model-name Kimi-K3"));
  // (and a startup budget sized for the small model, too short for K3's 1.56 TB)
  ASSERT_EQ(Rules(bad), (std::vector<std::string>{"K3-MODEL-001", "K3-MODEL-002", "K3-PROBE-001"}));
  auto json = nlohmann::json::parse(FormatFindings(bad, true));
  EXPECT_EQ(json[0]["rule"], "K3-MODEL-001");
  EXPECT_EQ(json[0]["severity"], "error");
  EXPECT_GT(json[0]["line"].get<int>(), 0);
}

}  // namespace
}  // namespace k3::deploy
