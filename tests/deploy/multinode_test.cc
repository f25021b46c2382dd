// Multi-node where the guide goes (issue 41 item 2): a PAI-EAS distributed unit (vLLM and k3), ACK's
// LeaderWorkerSet over the OSS volume, Azure ML on Kubernetes compute (and its refusal of two nodes), and
// Vertex's refusal. Each test checks what makes the group run: every rank agrees on the group (size, rank,
// leader), the engine reads where the weights are mounted, the names one file gives are the names another
// reads, and `k3 lint` finds no error where a broken copy gets one.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "src/deploy/lint.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;
using Files = std::map<std::string, std::string>;

Result<Files> TryRender(const RenderOptions& options) {
  K3_ASSIGN_OR_RETURN(std::vector<RenderedFile> files, Render(testing::TestCatalog(), options));
  Files out;
  for (const RenderedFile& f : files) out[f.path] = f.content;
  return out;
}

Files MustRender(const RenderOptions& options) {
  auto files = TryRender(options);
  EXPECT_TRUE(files.ok()) << files.status().ToString();
  return files.ok() ? *files : Files{};
}

// kimi-k3 (the guide's model) on the target's default instance: a group of several instances.
RenderOptions KimiK3(const std::string& target, Engine engine) {
  RenderOptions o = testing::TestRenderOptions(target, engine);
  o.plan.model = "kimi-k3";
  o.plan.max_model_len = 0;
  return o;
}

std::vector<Finding> Errors(const Files& files) {
  LintOptions lint;
  lint.catalog = &testing::TestCatalog();
  std::vector<Finding> out;
  for (const Finding& f : LintFiles(files, lint)) {
    if (f.severity == Severity::kError) out.push_back(f);
  }
  return out;
}

bool HasRule(const Files& files, const std::string& rule) {
  for (const Finding& f : Errors(files)) {
    if (f.rule == rule) return true;
  }
  return false;
}

// `bash -n` accepts the script (a stray quote in a message would end a string).
bool BashParses(const std::string& text) {
  const std::string path = ::testing::TempDir() + "k3_multinode_test.sh";
  {
    std::ofstream out(path);
    out << text;
  }
  return std::system(("bash -n " + path + " 2>/dev/null").c_str()) == 0;
}

std::string FlagOf(const std::string& cmd, const std::string& flag) {
  std::smatch m;
  if (std::regex_search(cmd, m, std::regex(flag + " +\"?([^ \"']+)"))) return m[1];
  return "";
}

TEST(PaiEasUnit, VllmSpansTheUnitWithOneProcessPerInstance) {
  const Files files = MustRender(KimiK3("alibaba-pai-eas", Engine::kVllm));
  const Json service = Json::parse(files.at("service.json"));
  // 3 x 8 H20: one unit of 3 instances per replica; EAS numbers them through RANK_ID.
  ASSERT_TRUE(service.contains("unit")) << service.dump(1);
  EXPECT_EQ(service["unit"]["size"], 3);
  EXPECT_EQ(service["metadata"]["instance"], 1);  // units
  EXPECT_EQ(service["metadata"]["gpu"], 8);       // per instance
  const std::string script = service["containers"][0]["script"];
  EXPECT_EQ(script.rfind("bash -c '", 0), 0u) << script;
  EXPECT_EQ(FlagOf(script, "--nnodes"), "3") << script;
  EXPECT_EQ(FlagOf(script, "--node-rank"), "$RANK_ID") << script;
  EXPECT_EQ(FlagOf(script, "--master-addr"), "$MASTER_ADDRESS") << script;
  // TP x PP = the unit's GPUs.
  EXPECT_EQ(std::stoi(FlagOf(script, "--tensor-parallel-size")) *
                std::stoi(FlagOf(script, "--pipeline-parallel-size")),
            3 * 8)
      << script;
  // Only instance 0 (the one EAS sends traffic to) serves HTTP.
  EXPECT_NE(script.find("if [ \"$RANK_ID\" != 0 ]; then set -- --headless; fi"), std::string::npos) << script;
  // The interface EAS names for rank traffic, and the kimi_k3 settings still there.
  EXPECT_NE(script.find("NCCL_SOCKET_IFNAME=\"$COMM_IFNAME\""), std::string::npos) << script;
  EXPECT_NE(service["containers"][0]["env"].dump().find("VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION"),
            std::string::npos);
  // Weights: the OSS mount is where the engine reads.
  EXPECT_EQ(service["storage"][0]["mount_path"], "/mnt/models/Kimi-K3/");
  EXPECT_NE(script.find("vllm serve /mnt/models/Kimi-K3 "), std::string::npos) << script;
  EXPECT_TRUE(BashParses(script.substr(9, script.size() - 10))) << script;  // the body of bash -c '...'
  EXPECT_TRUE(Errors(files).empty()) << FormatFindings(Errors(files), false);
  EXPECT_NE(files.at("NOTES.md").find("Lingjun"), std::string::npos);
}

TEST(PaiEasUnit, K3RunsItsRanksOnePerInstance) {
  const Files files = MustRender(KimiK3("alibaba-pai-eas", Engine::kK3));
  const Json service = Json::parse(files.at("service.json"));
  const int size = service["unit"]["size"];
  EXPECT_GE(size, 2);
  const std::string script = service["containers"][0]["script"];
  EXPECT_NE(script.find("exec k3 serve --model /mnt/models/Kimi-K3 "), std::string::npos) << script;
  EXPECT_EQ(FlagOf(script, "--nnodes"), std::to_string(size));
  EXPECT_EQ(std::stoi(FlagOf(script, "--tensor-parallel-size")) % size, 0) << script;
  EXPECT_EQ(FlagOf(script, "--node-rank"), "$RANK_ID");
  EXPECT_NE(script.find("GLOO_SOCKET_IFNAME=\"$COMM_IFNAME\""), std::string::npos) << script;
  EXPECT_EQ(service["metadata"]["gpu"], 0);  // k3 computes on the host CPUs
  EXPECT_TRUE(Errors(files).empty()) << FormatFindings(Errors(files), false);
}

TEST(PaiEasUnit, LintCatchesAUnitTheScriptDisagreesWith) {
  Files files = MustRender(KimiK3("alibaba-pai-eas", Engine::kVllm));
  ASSERT_FALSE(HasRule(files, "K3-GROUP-001"));
  Json service = Json::parse(files.at("service.json"));
  service["unit"]["size"] = 2;  // the script still starts --nnodes 3
  files["service.json"] = service.dump(2);
  EXPECT_TRUE(HasRule(files, "K3-GROUP-001")) << FormatFindings(Errors(files), false);
  EXPECT_TRUE(HasRule(files, "K3-PAR-001")) << FormatFindings(Errors(files), false);  // 24 ranks, 16 GPUs
  service.erase("unit");  // one instance of 8 GPUs for TP 8 x PP 3
  files["service.json"] = service.dump(2);
  EXPECT_TRUE(HasRule(files, "K3-PAR-003")) << FormatFindings(Errors(files), false);
}

TEST(PaiEasUnit, OneInstanceStaysAPlainService) {
  const Files files = testing::RenderFiles("alibaba-pai-eas", Engine::kVllm);  // kimi-linear-48b: 1 node
  const Json service = Json::parse(files.at("service.json"));
  EXPECT_FALSE(service.contains("unit"));
  EXPECT_EQ(std::string(service["containers"][0]["script"]).rfind("vllm serve ", 0), 0u);
}

// Every pod of the group mounts the OSS claim of weights.yaml where its engine reads.
void ExpectOssMountedWhereRead(const Files& files) {
  const Json lws = testing::FindDoc(files, "LeaderWorkerSet");
  const Json pvc = testing::FindDoc(files, "PersistentVolumeClaim");
  const auto& t = lws["spec"]["leaderWorkerTemplate"];
  for (const char* role : {"leaderTemplate", "workerTemplate"}) {
    const Json& pod = t[role]["spec"];
    std::string claim;
    for (const Json& v : pod["volumes"]) {
      if (v.contains("persistentVolumeClaim")) claim = v["persistentVolumeClaim"]["claimName"];
    }
    EXPECT_EQ(claim, pvc["metadata"]["name"]) << role;
    bool mounted = false;
    for (const Json& m : pod["containers"][0]["volumeMounts"]) {
      mounted |=
          m["name"] == "model-cache" && m["mountPath"] == "/mnt/models/Kimi-K3" && m["readOnly"] == true;
    }
    EXPECT_TRUE(mounted) << role << " " << pod.dump();
    EXPECT_FALSE(pod.contains("securityContext")) << role;  // the OSS mount is read-only
    EXPECT_EQ(pod["nodeSelector"]["node.kubernetes.io/instance-type"], "ecs.ebmgn8v.48xlarge") << role;
  }
  std::string leader_args;
  for (const Json& a : t["leaderTemplate"]["spec"]["containers"][0]["args"])
    leader_args += a.get<std::string>() + " ";
  EXPECT_TRUE(leader_args.find("/mnt/models/Kimi-K3 ") != std::string::npos ||
              leader_args.find("--model /mnt/models/Kimi-K3") != std::string::npos)
      << leader_args;
}

TEST(AckGroup, K3RendersALeaderWorkerSetOverTheOssVolume) {
  const Files files = MustRender(KimiK3("alibaba-ack", Engine::kK3));
  EXPECT_EQ(files.count("inferenceservice.yaml"), 0u);
  EXPECT_EQ(files.count("arena.sh"), 0u);
  ASSERT_EQ(files.count("kimi-k3-ack.yaml"), 1u);
  const Json lws = testing::FindDoc(files, "LeaderWorkerSet");
  const int size = lws["spec"]["leaderWorkerTemplate"]["size"];
  EXPECT_GE(size, 2);
  const Json leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0];
  const Json worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0];
  EXPECT_EQ(leader["command"][0], "k3");
  EXPECT_EQ(worker["args"].back(), "--headless");
  ExpectOssMountedWhereRead(files);
  const Json svc = testing::FindDoc(files, "Service");
  EXPECT_EQ(svc["spec"]["selector"]["role"], "leader");
  const std::string notes = files.at("NOTES.md");
  EXPECT_LT(notes.find("lws/releases/download/v0.10.0"), notes.find("kubectl apply -f kimi-k3-ack.yaml"));
  EXPECT_NE(notes.find("kubectl get svc kimi-k3-svc"), std::string::npos);  // Verify: the Service
  EXPECT_NE(files.at("cleanup.sh").find("kubectl delete -f kimi-k3-ack.yaml"), std::string::npos);
  EXPECT_TRUE(Errors(files).empty()) << FormatFindings(Errors(files), false);
}

TEST(AckGroup, TheLeaderWorkerSetValidatesStrictlyAgainstItsCrd) {
  // A schema dir holding only the LeaderWorkerSet CRD of ../shared/schemas (kubectl's strict validation).
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "k3_multinode_crds";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(
      testing::SourceDir() + "/../shared/schemas/lws-v0.10.0.leaderworkerset.x-k8s.io_leaderworkersets.yaml",
      dir / "lws.yaml", std::filesystem::copy_options::overwrite_existing);
  LintOptions lint;
  lint.catalog = &testing::TestCatalog();
  lint.schema_dir = dir.string();
  const auto crd_findings = [&](const Files& files) {
    std::vector<Finding> out;
    for (const Finding& f : LintFiles(files, lint)) {
      if (f.rule == "K3-CRD-001") out.push_back(f);
    }
    return out;
  };
  for (Engine engine : {Engine::kVllm, Engine::kK3}) {
    Files files = MustRender(KimiK3("alibaba-ack", engine));
    EXPECT_TRUE(crd_findings(files).empty()) << FormatFindings(crd_findings(files), false);
    std::string& manifest = files["kimi-k3-ack.yaml"];
    manifest.replace(manifest.find("restartPolicy:"), std::string("restartPolicy:").size(),
                     "restartPolicyx:");
    EXPECT_FALSE(crd_findings(files).empty()) << "a broken copy validates";
  }
}

TEST(AckGroup, VllmGroupsRunRayOverTheSameVolume) {
  const Files files = MustRender(KimiK3("alibaba-ack", Engine::kVllm));
  const Json lws = testing::FindDoc(files, "LeaderWorkerSet");
  EXPECT_EQ(lws["spec"]["leaderWorkerTemplate"]["size"], 3);
  ExpectOssMountedWhereRead(files);
  EXPECT_TRUE(Errors(files).empty()) << FormatFindings(Errors(files), false);
}

TEST(AckGroup, MultiNodeCpuPlanRendersTooAndOneNodeStaysKServe) {
  RenderOptions cpu = testing::TestRenderOptions("alibaba-ack", Engine::kK3);
  cpu.plan.model = "kimi-k3";
  cpu.plan.max_model_len = 0;
  cpu.plan.instance = "ecs.re6.26xlarge";  // 2 nodes x 2 NUMA ranks
  const Files files = MustRender(cpu);
  const Json lws = testing::FindDoc(files, "LeaderWorkerSet");
  EXPECT_EQ(lws["spec"]["leaderWorkerTemplate"]["size"], 2);
  EXPECT_TRUE(Errors(files).empty()) << FormatFindings(Errors(files), false);
  const Files one = testing::RenderFiles("alibaba-ack", Engine::kVllm);
  EXPECT_EQ(one.count("inferenceservice.yaml"), 1u);
  EXPECT_EQ(one.count("kimi-k3-ack.yaml"), 0u);
}

RenderOptions AmlKubernetes() {
  RenderOptions o = testing::TestRenderOptions("azure-ml", Engine::kVllm);
  o.compute = "kubernetes";
  return o;
}

TEST(AzureMlKubernetes, TheDeploymentNamesTheInstanceTypeThatSelectsThePool) {
  const Files files = MustRender(AmlKubernetes());
  const Json instance_type = testing::FindDoc(files, "InstanceType");
  const Json deployment = testing::YamlDocsAsJson(files.at("deployment.yml"), "deployment.yml").front();
  const Json endpoint = testing::YamlDocsAsJson(files.at("endpoint.yml"), "endpoint.yml").front();
  const std::string name = instance_type["metadata"]["name"];
  EXPECT_EQ(deployment["instance_type"], name);
  EXPECT_NE(std::string(deployment["$schema"]).find("kubernetesOnlineDeployment"), std::string::npos);
  EXPECT_NE(std::string(endpoint["$schema"]).find("kubernetesOnlineEndpoint"), std::string::npos);
  // The pool the InstanceType selects is the pool setup creates; the compute the endpoint names is the one
  // setup attaches; the pod gets every GPU of the VM.
  const std::string setup = files.at("setup-aml-k8s.sh");
  const std::string pool = instance_type["spec"]["nodeSelector"]["agentpool"];
  EXPECT_NE(setup.find("az aks nodepool add --resource-group \"$RESOURCE_GROUP\" --cluster-name \"$CLUSTER\" "
                       "--name " +
                       pool + " "),
            std::string::npos)
      << setup;
  EXPECT_EQ(setup.find("--node-taints"), std::string::npos);  // an InstanceType has no tolerations
  EXPECT_EQ(endpoint["compute"], "azureml:k3-aks");
  EXPECT_NE(setup.find("--type Kubernetes --name k3-aks "), std::string::npos) << setup;
  EXPECT_NE(
      setup.find("az k8s-extension create --name azureml --extension-type Microsoft.AzureML.Kubernetes"),
      std::string::npos);
  EXPECT_NE(setup.find("enableInference=True"), std::string::npos);
  EXPECT_EQ(instance_type["spec"]["resources"]["limits"]["nvidia.com/gpu"], 4);
  // Cleanup undoes setup (and the endpoint), in reverse.
  const std::string cleanup = files.at("cleanup.sh");
  for (const std::string& step :
       {std::string("az ml online-endpoint delete"), std::string("az ml compute detach"),
        std::string("kubectl delete -f instancetype.yaml"),
        std::string("az k8s-extension delete --name azureml"), std::string("az aks nodepool delete")}) {
    EXPECT_NE(cleanup.find(step), std::string::npos) << step;
  }
  EXPECT_LT(cleanup.find("az ml online-endpoint delete"), cleanup.find("az ml compute detach"));
  EXPECT_LT(files.at("NOTES.md").find("bash setup-aml-k8s.sh"),
            files.at("NOTES.md").find("az ml online-deployment create"));
  for (const char* script : {"setup-aml-k8s.sh", "cleanup.sh"})
    EXPECT_TRUE(BashParses(files.at(script))) << script;
  EXPECT_TRUE(Errors(files).empty()) << FormatFindings(Errors(files), false);
}

TEST(AzureMlKubernetes, LintReadsTheInstanceTypesGpus) {
  Files files = MustRender(AmlKubernetes());
  ASSERT_FALSE(HasRule(files, "K3-PAR-003"));
  std::string& it = files["instancetype.yaml"];
  it.replace(it.find("nvidia.com/gpu: 4"), std::string("nvidia.com/gpu: 4").size(), "nvidia.com/gpu: 2");
  EXPECT_TRUE(HasRule(files, "K3-PAR-003")) << FormatFindings(Errors(files), false);
}

TEST(AzureMlKubernetes, TwoNodesAreRefusedNamingWhatAzureMlLacks) {
  RenderOptions o = AmlKubernetes();
  o.plan.model = "kimi-k3";
  o.plan.max_model_len = 0;
  auto r = TryRender(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("one container per instance"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("azure-aks"), std::string::npos) << r.status().message();
}

TEST(AzureMlKubernetes, ComputeIsCheckedAndOnlyForAzureMl) {
  RenderOptions o = AmlKubernetes();
  o.compute = "aks";
  auto r = TryRender(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("managed, kubernetes"), std::string::npos);
  RenderOptions aks = testing::TestRenderOptions("azure-aks", Engine::kVllm);
  aks.compute = "kubernetes";
  r = TryRender(aks);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--target azure-ml"), std::string::npos);
  RenderOptions managed = testing::TestRenderOptions("azure-ml", Engine::kVllm);
  managed.compute = "managed";
  const Files files = MustRender(managed);
  EXPECT_EQ(files.count("instancetype.yaml"), 0u);
  EXPECT_EQ(files.at("deployment.yml").find("kubernetesOnline"), std::string::npos);
}

TEST(VertexMultiHost, KimiK3IsRefusedNamingTheDocumentedPath) {
  auto r = TryRender(KimiK3("gcp-vertex", Engine::kVllm));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("multi-host GPU"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("gcp-gke"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace k3::deploy
