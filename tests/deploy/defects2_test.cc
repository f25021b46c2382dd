// Regression tests for the 13 defects and the "also seen" items of the second deploy dry run
// (../shared/spec/deploy-dry-run-2.md, issue 41). One test per defect, named Defect2NN; each checks the
// behaviour the dry run missed (the path written is the path read, identity wiring exists for the scheme,
// --instance decides every GPU-type string, cleanup finds what setup created), not the text of a fix.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "src/deploy/lint.h"
#include "src/deploy/render_output.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;
using testing::FindDoc;
using testing::ServingContainer;

using Files = std::map<std::string, std::string>;

Result<Files> TryRenderFiles(const RenderOptions& options) {
  K3_ASSIGN_OR_RETURN(std::vector<RenderedFile> files, Render(testing::TestCatalog(), options));
  Files out;
  for (const RenderedFile& f : files) out[f.path] = f.content;
  return out;
}

Files MustRender(const RenderOptions& options) {
  auto files = TryRenderFiles(options);
  EXPECT_TRUE(files.ok()) << files.status().ToString();
  return files.ok() ? *files : Files{};
}

std::string JoinedArgs(const Json& argv) {
  std::string out;
  for (const Json& a : argv) out += (out.empty() ? "" : " ") + a.get<std::string>();
  return out;
}

std::string FlagOf(const std::string& cmd, const std::string& flag) {
  std::smatch m;
  if (std::regex_search(cmd, m, std::regex(flag + "[ =]+\"?([^ \\\\\n;\"]+)"))) return m[1];
  return "";
}

std::vector<Json> AllDocs(const Files& files) {
  std::vector<Json> docs;
  for (const auto& [path, text] : files) {
    if (path.size() > 5 && path.substr(path.size() - 5) == ".yaml") {
      for (Json& d : testing::YamlDocsAsJson(text, path)) docs.push_back(std::move(d));
    }
  }
  return docs;
}

// Every pod template (spec + metadata) of the rendered workloads and Jobs.
std::vector<Json> PodTemplates(const Files& files) {
  std::vector<Json> pods;
  for (const Json& d : AllDocs(files)) {
    if (d["kind"] == "Deployment" || d["kind"] == "Job") pods.push_back(d["spec"]["template"]);
    if (d["kind"] == "LeaderWorkerSet") {
      pods.push_back(d["spec"]["leaderWorkerTemplate"]["leaderTemplate"]);
      pods.push_back(d["spec"]["leaderWorkerTemplate"]["workerTemplate"]);
    }
  }
  return pods;
}

void ExpectRefused(const RenderOptions& o, const std::string& names) {
  auto r = TryRenderFiles(o);
  ASSERT_FALSE(r.ok()) << o.target << " " << o.weights << " rendered";
  EXPECT_NE(r.status().message().find(names), std::string::npos) << r.status().message();
}

TEST(DryRun2Defects, Defect201HyperPodVllmServesWhatTheOperatorMounts) {
  for (const std::string& weights : {std::string(), std::string("s3://my-bucket/kimi-k3")}) {
    Files files = testing::RenderFiles("aws-hyperpod", Engine::kVllm, weights);
    const Json iec = testing::YamlDocsAsJson(files["kimi-k3.yaml"], "hp")[0];
    const Json& worker = iec["spec"]["worker"];
    EXPECT_EQ(FlagOf(JoinedArgs(worker["args"]), "--model"), worker["modelVolumeMount"]["mountPath"])
        << weights;
    EXPECT_NE(worker["environmentVariables"].dump().find("HF_HUB_OFFLINE"), std::string::npos);
  }
}

TEST(DryRun2Defects, Defect202AckRendersOnlyWhatKServeAccepts) {
  RenderOptions o = testing::TestRenderOptions("alibaba-ack", Engine::kVllm);
  o.plan.model = "kimi-k3";  // 3 x 8 H20: a multi-node predictor KServe would reject
  o.plan.max_model_len = 0;
  // A group is a LeaderWorkerSet instead (issue 41): no InferenceService at all.
  const Files group = MustRender(o);
  EXPECT_EQ(group.count("inferenceservice.yaml"), 0u);
  EXPECT_EQ(FindDoc(group, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["size"], 3);
  // One node: no workerSpec, and every mounted volume exists in the pod.
  Files files = testing::RenderFiles("alibaba-ack", Engine::kVllm);
  const Json predictor = FindDoc(files, "InferenceService")["spec"]["predictor"];
  EXPECT_FALSE(predictor.contains("workerSpec")) << predictor.dump();
  std::set<std::string> volumes;
  for (const Json& v : predictor["volumes"]) volumes.insert(v["name"]);
  for (const Json& c : predictor["containers"]) {
    for (const Json& m : c["volumeMounts"]) EXPECT_TRUE(volumes.count(m["name"])) << m.dump();
  }
}

TEST(DryRun2Defects, Defect203GatewayPickerRbacAndGkePolicies) {
  for (const char* target : {"aws-eks", "gcp-gke"}) {
    Files files = testing::RenderFiles(target, Engine::kVllm, "", true);
    const auto docs = testing::YamlDocsAsJson(files["gateway.yaml"], "gateway");
    bool rewrites = false;
    std::string pool;
    for (const Json& d : docs) {
      if (d["kind"] == "InferencePool") pool = d["metadata"]["name"];
      if (d["kind"] != "Role") continue;
      for (const Json& rule : d["rules"]) {
        rewrites |= rule["apiGroups"].dump().find("inference.networking.x-k8s.io") != std::string::npos &&
                    rule["resources"].dump().find("\"inferencemodelrewrites\"") != std::string::npos;
      }
    }
    EXPECT_TRUE(rewrites) << target;
    if (std::string(target) != "gcp-gke") continue;
    int policies = 0;
    for (const Json& d : docs) {
      if (d["kind"] != "HealthCheckPolicy" && d["kind"] != "GCPBackendPolicy") continue;
      ++policies;
      EXPECT_EQ(d["spec"]["targetRef"]["kind"], "InferencePool");
      EXPECT_EQ(d["spec"]["targetRef"]["name"], pool);
      if (d["kind"] == "HealthCheckPolicy") {
        EXPECT_EQ(d["spec"]["default"]["config"]["httpHealthCheck"]["requestPath"], "/health");
        EXPECT_EQ(d["spec"]["default"]["config"]["httpHealthCheck"]["port"], 8000);
      }
    }
    EXPECT_EQ(policies, 2);
    // The regional external managed class needs a proxy-only subnet; cleanup deletes what setup made.
    EXPECT_NE(files["setup-cluster.sh"].find("--purpose=REGIONAL_MANAGED_PROXY"), std::string::npos);
    EXPECT_NE(files["cleanup.sh"].find("subnets delete k3-proxy-only"), std::string::npos);
  }
}

TEST(DryRun2Defects, Defect204VertexCopiesEveryPlatform) {
  const std::string s = testing::RenderFiles("gcp-vertex", Engine::kVllm)["deploy-vertex.sh"];
  EXPECT_EQ(s.find("docker pull"), std::string::npos) << s;
  EXPECT_NE(s.find("docker buildx imagetools create --tag \"$IMAGE\" \"$SOURCE_IMAGE\""), std::string::npos);
}

TEST(DryRun2Defects, Defect205IdentityWiringForEachBucketScheme) {
  for (Engine engine : {Engine::kVllm, Engine::kK3}) {
    // AKS + az://: workload identity, federated with the ServiceAccount every pod runs as.
    Files aks = testing::RenderFiles("azure-aks", engine, "az://kimi/models/Kimi-K3");
    const std::string setup = aks["setup-cluster.sh"];
    EXPECT_NE(setup.find("--enable-oidc-issuer"), std::string::npos);
    EXPECT_NE(setup.find("--enable-workload-identity"), std::string::npos);
    EXPECT_NE(setup.find("az role assignment create"), std::string::npos);
    std::smatch subject;
    ASSERT_TRUE(std::regex_search(setup, subject,
                                  std::regex("--subject system:serviceaccount:([a-z0-9-]+):"
                                             "([a-z0-9-]+)")));
    for (const Json& pod : PodTemplates(aks)) {
      EXPECT_EQ(pod["spec"]["serviceAccountName"], subject[2].str()) << pod.dump();
      EXPECT_EQ(pod["metadata"]["labels"]["azure.workload.identity/use"], "true");
    }
    for (const auto& [path, text] : aks) EXPECT_EQ(text.find("K3_AZURE_MANAGED_IDENTITY"), std::string::npos);
    // GKE + gs://: the workload pool, GKE_METADATA nodes and a bucket binding for the pods' account.
    Files gke = testing::RenderFiles("gcp-gke", engine, "gs://my-bucket/Kimi-K3");
    const std::string gsetup = gke["setup-cluster.sh"];
    EXPECT_NE(gsetup.find("--workload-pool=\"$PROJECT_ID.svc.id.goog\""), std::string::npos);
    EXPECT_NE(gsetup.find("--workload-metadata=GKE_METADATA"), std::string::npos);
    std::smatch member;
    ASSERT_TRUE(std::regex_search(gsetup, member, std::regex("subject/ns/([a-z0-9-]+)/sa/([a-z0-9-]+)")));
    EXPECT_NE(gsetup.find(engine == Engine::kK3 ? "roles/storage.objectUser" : "roles/storage.objectViewer"),
              std::string::npos);
    for (const Json& pod : PodTemplates(gke)) EXPECT_EQ(pod["spec"]["serviceAccountName"], member[2].str());
    EXPECT_NE(gke["cleanup.sh"].find("remove-iam-policy-binding"), std::string::npos);
  }
  // A bucket of another cloud has no credentials there: refused, not rendered.
  const std::vector<std::pair<std::string, std::string>> cross = {{"aws-eks", "az://kimi/models/Kimi-K3"},
                                                                  {"aws-eks", "gs://b/K"},
                                                                  {"azure-aks", "s3://b/k"},
                                                                  {"gcp-gke", "az://kimi/models/Kimi-K3"},
                                                                  {"k8s", "gs://b/K"}};
  for (const auto& [target, weights] : cross) {
    ExpectRefused(testing::TestRenderOptions(target, Engine::kK3, weights), "--target " + target + " reads");
  }
  // A generic cluster reads s3:// with keys from a Secret named in its pods.
  Files k8s = testing::RenderFiles("k8s", Engine::kK3, "s3://my-bucket/kimi-k3");
  for (const Json& pod : PodTemplates(k8s)) {
    EXPECT_EQ(pod["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"], "kimi-k3-bucket-credentials");
  }
  EXPECT_NE(k8s["NOTES.md"].find("kubectl create secret generic kimi-k3-bucket-credentials"),
            std::string::npos);
}

TEST(DryRun2Defects, Defect206K3JobCanWriteTheFreshVolume) {
  // The uid the k3 image runs as, from the Dockerfile that builds it.
  std::ifstream in(testing::SourceDir() + "/Dockerfile");
  std::string dockerfile((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch uid;
  ASSERT_TRUE(std::regex_search(dockerfile, uid, std::regex("--uid ([0-9]+)")));
  for (const char* target : {"aws-eks", "azure-aks", "gcp-gke", "k8s"}) {
    Files files = testing::RenderFiles(target, Engine::kK3);
    for (const Json& pod : PodTemplates(files)) {
      if (!pod["spec"].contains("volumes") ||
          pod["spec"]["volumes"].dump().find("persistentVolumeClaim") == std::string::npos) {
        continue;
      }
      EXPECT_EQ(pod["spec"]["securityContext"]["fsGroup"], std::stoi(uid[1])) << target << pod.dump();
    }
  }
}

TEST(DryRun2Defects, Defect207WeightsAreNeverIgnored) {
  ExpectRefused(testing::TestRenderOptions("azure-ml", Engine::kVllm, "az://kimi/models/Kimi-K3"),
                "reads hf://");
  ExpectRefused(testing::TestRenderOptions("gcp-vertex", Engine::kVllm, "gs://b/K"), "reads hf://");
  ExpectRefused(testing::TestRenderOptions("alibaba-pai-eas", Engine::kVllm, "s3://b/k"), "oss://");
  ExpectRefused(testing::TestRenderOptions("alibaba-ack", Engine::kVllm, "s3://b/k"), "oss://");
  RenderOptions hub = testing::TestRenderOptions("alibaba-pai-eas", Engine::kVllm);
  hub.weights.clear();
  ExpectRefused(hub, "k3 weights sync hf://");
  // The OSS URI given is the one mounted.
  Files eas = testing::RenderFiles("alibaba-pai-eas", Engine::kVllm, "oss://kimi/Kimi-K3");
  EXPECT_EQ(Json::parse(eas["service.json"])["storage"][0]["oss"]["path"], "oss://kimi/Kimi-K3/");
  Files ack = testing::RenderFiles("alibaba-ack", Engine::kVllm, "oss://kimi/Kimi-K3");
  const Json attrs = FindDoc(ack, "PersistentVolume")["spec"]["csi"]["volumeAttributes"];
  EXPECT_EQ(attrs["bucket"], "kimi");
  EXPECT_EQ(attrs["path"], "/Kimi-K3");
}

TEST(DryRun2Defects, Defect208NoPlaceholderInFilesToApply) {
  const std::regex placeholder("<[A-Z][A-Z_]*>");
  for (const testing::Combination& c : testing::AllCombinations()) {
    for (const auto& [path, text] : testing::RenderCombination(c)) {
      if (path == "NOTES.md") continue;
      EXPECT_FALSE(std::regex_search(text, placeholder)) << c.label << ": " << path;
    }
  }
  RenderOptions hp = testing::TestRenderOptions("aws-hyperpod", Engine::kVllm, "s3://my-bucket/kimi-k3");
  hp.region.clear();
  ExpectRefused(hp, "--region");
  RenderOptions ack = testing::TestRenderOptions("alibaba-ack", Engine::kVllm);
  ack.region.clear();
  ExpectRefused(ack, "--region");
  EXPECT_EQ(FindDoc(testing::RenderFiles("alibaba-ack", Engine::kVllm),
                    "PersistentVolume")["spec"]["csi"]["volumeAttributes"]["url"],
            "oss-cn-hangzhou-internal.aliyuncs.com");
}

TEST(DryRun2Defects, Defect209InstanceDecidesEveryGpuString) {
  RenderOptions gke = testing::TestRenderOptions("gcp-gke", Engine::kVllm);
  gke.plan.instance = "a3-ultragpu-8g";
  Files g = MustRender(gke);
  for (const Json& pod : PodTemplates(g)) {
    if (pod["spec"].contains("nodeSelector")) {
      EXPECT_EQ(pod["spec"]["nodeSelector"]["cloud.google.com/gke-accelerator"], "nvidia-h200-141gb");
    }
  }
  EXPECT_NE(g["setup-cluster.sh"].find("--accelerator=type=nvidia-h200-141gb,count=8"), std::string::npos);
  for (const char* a4x_only :
       {"--placement-policy", "--accelerator-network-profile", "gb300", "WORKLOAD_POLICY"})
    EXPECT_EQ(g["setup-cluster.sh"].find(a4x_only), std::string::npos) << a4x_only;
  RenderOptions vertex = testing::TestRenderOptions("gcp-vertex", Engine::kVllm);
  vertex.plan.instance = "a3-ultragpu-8g";
  Files v = MustRender(vertex);
  EXPECT_NE(v["deploy-vertex.sh"].find("--accelerator=type=nvidia-h200-141gb,count=8"), std::string::npos);
  // The guide's A4X notes and its 18-replica rack minimum belong to A4X, not to an H200 instance.
  EXPECT_EQ(v["deploy-vertex.sh"].find("A4X"), std::string::npos) << v["deploy-vertex.sh"];
  EXPECT_NE(v["deploy-vertex.sh"].find("--min-replica-count=1 "), std::string::npos);
  RenderOptions aks = testing::TestRenderOptions("azure-aks", Engine::kVllm);
  aks.plan.instance = "Standard_ND96isr_H200_v5";
  Files a = MustRender(aks);
  for (const Json& pod : PodTemplates(a)) {
    if (pod["spec"].contains("nodeSelector")) {
      EXPECT_EQ(pod["spec"]["nodeSelector"]["agentpool"], "h200pool");
    }
  }
  EXPECT_EQ(a["NOTES.md"].find("GB300"), std::string::npos) << a["NOTES.md"];
  for (const char* f : {"setup-cluster.sh", "cleanup.sh"}) {
    EXPECT_NE(a[f].find("--name h200pool"), std::string::npos) << f;
    EXPECT_EQ(a[f].find("gb300"), std::string::npos) << f;
  }
  // amd64 H200 nodes: no arm64 finding.
  LintOptions lint;
  lint.catalog = &testing::TestCatalog();
  for (const Files* files : {&g, &a}) {
    for (const Finding& f : LintFiles(*files, lint)) {
      EXPECT_EQ(f.rule.rfind("K3-ARCH", 0), std::string::npos) << f.message;
    }
  }
}

TEST(DryRun2Defects, Defect210CapacityReservationIsAttachedAndCleanedUpByItsId) {
  Files files = testing::RenderFiles("azure-aks", Engine::kVllm);
  const std::string setup = files["setup-cluster.sh"];
  EXPECT_NE(setup.find("CRG_ARGS=(--crg-id \"$CAPACITY_RESERVATION_GROUP_ID\")"), std::string::npos);
  EXPECT_NE(setup.find("IDENTITY_ARGS=(--assign-identity"), std::string::npos);
  const size_t pool = setup.find("az aks nodepool add");
  ASSERT_NE(pool, std::string::npos);
  EXPECT_NE(setup.find("\"${CRG_ARGS[@]}\"", pool), std::string::npos);
  const std::string cleanup = files["cleanup.sh"];
  // The group is read from the node pool before the pool goes, never a default name.
  const size_t read = cleanup.find("--query capacityReservationGroupId");
  ASSERT_NE(read, std::string::npos);
  EXPECT_LT(read, cleanup.find("az aks nodepool delete"));
  EXPECT_EQ(cleanup.find("crg-kimi-k3"), std::string::npos);
  EXPECT_NE(cleanup.find("could not list them"), std::string::npos);
}

TEST(DryRun2Defects, Defect211GkeVolumeHasItsCsiDriver) {
  Files files = testing::RenderFiles("gcp-gke", Engine::kVllm);
  EXPECT_EQ(FindDoc(files, "PersistentVolumeClaim")["spec"]["storageClassName"], "premium-rwx");
  EXPECT_NE(files["setup-cluster.sh"].find("--addons=GcpFilestoreCsiDriver"), std::string::npos);
}

TEST(DryRun2Defects, Defect212NamespaceIsCreatedValidatedAndUsed) {
  for (const char* target : {"azure-aks", "aws-hyperpod", "alibaba-ack"}) {
    RenderOptions o = testing::TestRenderOptions(target, Engine::kVllm);
    o.name_space = "team-a";
    Files files = MustRender(o);
    ASSERT_TRUE(files.count("namespace.yaml")) << target;
    const Json ns = testing::YamlDocsAsJson(files["namespace.yaml"], "ns")[0];
    EXPECT_EQ(ns["kind"], "Namespace");
    EXPECT_EQ(ns["metadata"]["name"], "team-a");
    // Every kubectl line of NOTES that names an object by name says where it is.
    std::istringstream notes(files["NOTES.md"]);
    for (std::string line; std::getline(notes, line);) {
      if (std::regex_search(line, std::regex("kubectl (get|wait) "))) {
        EXPECT_NE(line.find("-n team-a"), std::string::npos) << target << ": " << line;
      }
    }
    EXPECT_LT(files["NOTES.md"].find("kubectl apply -f namespace.yaml"), files["NOTES.md"].find("## Verify"));
  }
  RenderOptions bad = testing::TestRenderOptions("azure-aks", Engine::kVllm);
  bad.name_space = "Bad_NS";
  ExpectRefused(bad, "DNS-1123");
}

TEST(DryRun2Defects, Defect213K3OnGpuInstancesIsACpuPlan) {
  // p6-b300 (4 TiB RAM): one rank per node; the pod asks for its RAM and no GPU.
  Files eks = testing::RenderFiles("aws-eks", Engine::kK3);
  const Json server = ServingContainer(eks);
  EXPECT_FALSE(server["resources"].dump().find("nvidia.com/gpu") != std::string::npos) << server["resources"];
  const std::string memory = server["resources"]["requests"]["memory"];
  const double need_gib = std::stod(memory.substr(0, memory.size() - 2));
  // 1.56 TB of weights + the 1M-token latent (29 GB) + margin, in GiB.
  EXPECT_GT(need_gib * (1 << 30), 1.559956066048e12 + 29e9);
  EXPECT_LT(need_gib, 4096 * 0.9);
  // GB300 VMs (864 GiB): two nodes, one rank each, each asking for its ~817 GB.
  Files aks = testing::RenderFiles("azure-aks", Engine::kK3);
  const Json lws = FindDoc(aks, "LeaderWorkerSet");
  EXPECT_EQ(lws["spec"]["leaderWorkerTemplate"]["size"], 2);
  for (const char* t : {"leaderTemplate", "workerTemplate"}) {
    const Json& res = lws["spec"]["leaderWorkerTemplate"][t]["spec"]["containers"][0]["resources"];
    EXPECT_EQ(res.dump().find("nvidia.com/gpu"), std::string::npos) << res;
    const std::string m = res["requests"]["memory"];
    EXPECT_GT(std::stod(m.substr(0, m.size() - 2)) * (1 << 30), 780e9) << m;
  }
  // One rank cannot hold 1.56 TB in 864 GiB: refused, naming the RAM.
  RenderOptions one = testing::TestRenderOptions("azure-aks", Engine::kK3);
  one.plan.cpu.tensor_parallel_size = 1;
  ExpectRefused(one, "GiB");
}

TEST(DryRun2Defects, AlsoSeenRenderRefusesAUsedFolderUnlessForced) {
  const std::string dir = ::testing::TempDir() + "/k3-render-out";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/gateway.yaml") << "old\n";
  std::ofstream(dir + "/NOTES.md") << "old\n";
  const std::vector<RenderedFile> files = {{"NOTES.md", "new"}, {"kimi-k3.yaml", "x"}};
  auto refused = PrepareOutputDir(dir, files, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("gateway.yaml"), std::string::npos);
  EXPECT_NE(refused.status().message().find("--force"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir + "/gateway.yaml"));
  auto forced = PrepareOutputDir(dir, files, true);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ(*forced, std::vector<std::string>{"gateway.yaml"});
  EXPECT_FALSE(std::filesystem::exists(dir + "/gateway.yaml"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/NOTES.md"));  // overwritten by the render, not deleted
  std::filesystem::create_directories(dir + "/sub");
  EXPECT_FALSE(PrepareOutputDir(dir, files, true).ok());  // folders are never deleted
  std::filesystem::remove_all(dir);
}

TEST(DryRun2Defects, AlsoSeenProbesWaitForTheVolumeRate) {
  // AKS: an Azure Files premium share of 1,817 GiB reads 100 + 73 + 110 = 283 MiB/s, far below 10 Gbps.
  Files aks = testing::RenderFiles("azure-aks", Engine::kVllm);
  const int64_t gib = std::stoll(
      FindDoc(aks, "PersistentVolumeClaim")["spec"]["resources"]["requests"]["storage"].get<std::string>());
  const double mib_s = 100 + std::ceil(0.04 * gib) + std::ceil(0.06 * gib);
  const double load_s = 1.559956066048e12 / (mib_s * 1024 * 1024);
  const Json probe = ServingContainer(aks)["startupProbe"];
  EXPECT_GE(probe["periodSeconds"].get<int>() * probe["failureThreshold"].get<int>(), 2 * load_s) << probe;
  EXPECT_NE(aks["NOTES.md"].find(fmt::format("{:.0f} MiB/s", mib_s)), std::string::npos) << aks["NOTES.md"];
  // EKS on one EBS volume: at most 125 MiB/s (gp3 baseline).
  const Json eks = ServingContainer(testing::RenderFiles("aws-eks", Engine::kVllm))["startupProbe"];
  EXPECT_GE(eks["periodSeconds"].get<int>() * eks["failureThreshold"].get<int>(),
            2 * 1.559956066048e12 / (125.0 * 1024 * 1024));
  // Streamed from the bucket: the planned bandwidth holds (10 Gbps: 1,248 s load, 104 x 30 s).
  const Json streamed =
      ServingContainer(testing::RenderFiles("azure-aks", Engine::kVllm, "az://kimi/models/K"));
  EXPECT_EQ(streamed["startupProbe"]["failureThreshold"], 104);
}

TEST(DryRun2Defects, AlsoSeenEveryTargetVerifiesAndCleansUpWithoutPlaceholders) {
  for (const testing::Combination& c : testing::AllCombinations()) {
    Files files = testing::RenderCombination(c);
    EXPECT_TRUE(files.count("cleanup.sh")) << c.label;
    const std::string& notes = files["NOTES.md"];
    const size_t verify = notes.find("## Verify");
    ASSERT_NE(verify, std::string::npos) << c.label;
    EXPECT_EQ(notes.find('<', verify), std::string::npos) << c.label << ": " << notes.substr(verify);
    if (c.options.gateway) {
      EXPECT_NE(notes.find("kubectl get gateway", verify), std::string::npos) << c.label;
    }
  }
  for (const char* target : {"aws-hyperpod", "azure-ml", "gcp-vertex", "alibaba-pai-eas"}) {
    Files files = testing::RenderFiles(target, Engine::kVllm);
    EXPECT_TRUE(std::regex_search(files["cleanup.sh"], std::regex("\n *run \"")))
        << target << files["cleanup.sh"];
  }
  EXPECT_NE(testing::RenderFiles("gcp-vertex", Engine::kVllm)["cleanup.sh"].find("undeploy-model"),
            std::string::npos);
}

}  // namespace
}  // namespace k3::deploy
