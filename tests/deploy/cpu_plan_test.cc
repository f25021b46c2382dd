// K3 on CPU machines: `k3 plan --engine k3` on CPU-only instances (RAM per rank, ranks per node, nodes,
// decode tokens/s, each checked against numbers computed by hand below), its refusals, and `k3 render`
// + `k3 lint` of a CPU plan for every cloud's CPU instance.
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/deploy/catalog_data.h"
#include "src/deploy/lint.h"
#include "src/deploy/plan.h"
#include "src/deploy/plan_format.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using nlohmann::json;
using testing::TestCatalog;

PlanOptions CpuOptions(const std::string& target, const std::string& instance) {
  PlanOptions o;
  o.target = target;
  o.instance = instance;
  o.engine = Engine::kK3;
  return o;
}

Result<TargetPlan> PlanOne(const PlanOptions& options) {
  K3_ASSIGN_OR_RETURN(Plan plan, BuildPlan(TestCatalog(), options));
  return plan.targets.front();
}

TEST(CpuCatalogTest, EveryCloudHasACpuInstanceWithBandwidthAndNetwork) {
  std::set<std::string> clouds;
  for (const Instance& in : TestCatalog().instances) {
    if (!in.CpuOnly()) continue;
    clouds.insert(in.cloud);
    EXPECT_GE(in.cpu.numa_nodes, 1) << in.id;
    EXPECT_GT(in.cpu.memory_bandwidth_gbs_per_socket, 0) << in.id;
    EXPECT_FALSE(in.cpu.memory_bandwidth_note.empty()) << in.id;
    EXPECT_GT(in.cpu.network_gbps, 0) << in.id;
    EXPECT_GE(in.ram_gib, 1024) << in.id;
    EXPECT_TRUE(!in.prices.empty() || !in.price_note.empty()) << in.id;
  }
  EXPECT_EQ(clouds, (std::set<std::string>{"aws", "azure", "gcp", "alibaba"}));
}

TEST(CpuCatalogTest, ACpuInstanceWithoutItsCpuObjectIsRejected) {
  std::map<std::string, std::string> files;
  for (const char* name : {"sources", "gpus", "instances", "models", "targets"}) {
    files[name] = std::string(EmbeddedCatalogFile(name));
  }
  json instances = json::parse(files["instances"]);
  for (json& in : instances["instances"]) {
    if (in["id"] == "x2iedn.32xlarge") in.erase("cpu");
  }
  files["instances"] = instances.dump();
  auto parsed = ParseCatalog(files);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find(".cpu: missing"), std::string::npos) << parsed.status().message();
}

// x2iedn.32xlarge (2 sockets, 4096 GiB, 204.8 GB/s per socket), Kimi K3 at its 1,048,576-token context,
// one sequence, by hand:
//   TP 2 (one rank per NUMA node), 1 node
//   weights  1,559,956,066,048 B / 2          = 779.978 GB
//   MLA      27,648 B x 1,048,576             =  28.991 GB
//   KDA      464,633,856 B / 2                =   0.232 GB
//   vision   447,358,976 params x 2 B (a whole tower per rank, plan_vision.h)
//            + one 65,536-patch image: 2 S h b + 2 S I b = 268,435,456 + 1,073,741,824 B
//                                             =   2.237 GB
//   margin                                    =   8.000 GB   -> 819.438 GB per rank, 1,638.877 GB per node
//   usable   4,096 GiB x 0.9                  = 3,958.242 GB
//   bytes per token: 16 x 92 x 17,547,264 B = 25,829,572,608 B routed
//                  + (1,559,956,066,048 - 896 x 92 x 17,547,264 - 2,348,810,240) = 111,151,189,760 B
//   t_memory  = 136,980,762,368 B / 2 / (204.8 GB/s x 0.7)  = 0.4777510 s
//   t_network = 278 all-reduces x 2 steps x 10 us           = 0.00556 s
//   decode    = 1 / 0.4833110 s                             = 2.06906 tokens/s
TEST(CpuPlanTest, X2iednHoldsKimiK3OnOneNodeWithHandComputedNumbers) {
  auto tp = PlanOne(CpuOptions("aws-eks", "x2iedn.32xlarge"));
  ASSERT_TRUE(tp.ok()) << tp.status().ToString();
  ASSERT_TRUE(tp->cpu_only);
  EXPECT_TRUE(tp->fits);
  EXPECT_EQ(tp->cpu.nodes, 1);
  EXPECT_EQ(tp->cpu.ranks_per_node, 2);
  EXPECT_EQ(tp->layout.tp, 2);
  EXPECT_EQ(tp->layout.gpus_per_node, 0);
  const RamPerRank& r = tp->cpu.ram;
  EXPECT_NEAR(r.weights_gb, 779.978033024, 1e-6);
  EXPECT_NEAR(r.mla_cache_gb, 28.991029248, 1e-6);
  EXPECT_NEAR(r.kda_state_gb, 0.232316928, 1e-9);
  EXPECT_NEAR(r.vision_gb, 2.236895232, 1e-9);
  EXPECT_NEAR(r.need_gb, 819.438274432, 1e-6);
  EXPECT_NEAR(r.node_need_gb, 1638.876548864, 1e-6);
  EXPECT_NEAR(r.node_usable_gb, 3958.2418599936, 1e-6);
  const DecodeEstimate& d = tp->cpu.decode;
  EXPECT_EQ(d.routed_bytes_per_token, 25829572608);
  EXPECT_EQ(d.dense_bytes_per_token, 111151189760);
  EXPECT_EQ(d.all_reduces_per_token, 278);
  EXPECT_EQ(d.ring_steps, 2);
  EXPECT_NEAR(d.memory_seconds, 0.4777509848, 1e-9);
  EXPECT_NEAR(d.network_seconds, 0.00556, 1e-12);
  EXPECT_NEAR(d.tokens_per_second, 2.0690611871, 1e-8);
  EXPECT_DOUBLE_EQ(tp->cost.low_per_hour, 26.676);  // K2, us-east-1 on-demand
}

// ecs.re6.26xlarge (2 sockets, 1,536 GiB = 1,484.341 GB usable): one node would need 1,638.9 GB, so two
// nodes x 2 ranks (TP 4): 389.989 + 28.991 + 0.116 + 2.237 (vision) + 8 = 429.333 GB per rank, 858.666 GB
// per node.
//   t_memory  = 136.980762368 GB / 4 / (2 x 140.8 / 2 GB/s x 0.7)         = 0.3474553 s
//   t_network = 278 x 6 steps x 50 us + 6,651,904 B x 6 / 4 x 8 / 16 Gbit/s = 0.0883889 s
//   decode    = 1 / 0.4358442 s                                            = 2.29440 tokens/s
TEST(CpuPlanTest, SmallerNodesSplitKimiK3OverTwoNodes) {
  auto tp = PlanOne(CpuOptions("k8s", "ecs.re6.26xlarge"));
  ASSERT_TRUE(tp.ok()) << tp.status().ToString();
  EXPECT_EQ(tp->cpu.nodes, 2);
  EXPECT_EQ(tp->cpu.ranks_per_node, 2);
  EXPECT_EQ(tp->layout.nodes, 2);
  EXPECT_EQ(tp->layout.tp, 4);
  EXPECT_NEAR(tp->cpu.ram.need_gb, 429.333099456, 1e-6);
  EXPECT_NEAR(tp->cpu.ram.node_need_gb, 858.666198912, 1e-6);
  EXPECT_NEAR(tp->cpu.ram.node_usable_gb, 1484.3406974976, 1e-6);
  EXPECT_EQ(tp->cpu.decode.ring_steps, 6);
  EXPECT_NEAR(tp->cpu.decode.memory_seconds, 0.3474552617, 1e-9);
  EXPECT_NEAR(tp->cpu.decode.network_seconds, 0.088388928, 1e-12);
  EXPECT_NEAR(tp->cpu.decode.tokens_per_second, 2.2943979148, 1e-8);
  EXPECT_FALSE(tp->cost.known);  // no dated public Alibaba price: unknown, never invented
}

TEST(CpuPlanTest, TensorParallelSizeOverridesRanksPerNode) {
  PlanOptions o = CpuOptions("aws-eks", "x2iedn.32xlarge");
  o.cpu.tensor_parallel_size = 4;
  auto tp = PlanOne(o);
  ASSERT_TRUE(tp.ok()) << tp.status().ToString();
  EXPECT_EQ(tp->cpu.nodes, 1);
  EXPECT_EQ(tp->cpu.ranks_per_node, 4);
  // Four ranks share the node's 409.6 GB/s: the memory term does not improve, the latency term grows.
  EXPECT_NEAR(tp->cpu.decode.bandwidth_per_rank_gbs, 102.4, 1e-9);
  EXPECT_EQ(tp->cpu.decode.ring_steps, 6);
}

TEST(CpuPlanTest, PrintsTheFormulaWithItsNumbers) {
  PlanOptions o = CpuOptions("aws-eks", "x2iedn.32xlarge");
  auto plan = BuildPlan(TestCatalog(), o);
  ASSERT_TRUE(plan.ok());
  const std::string text = FormatPlan(*plan, PlanFormat::kTable);
  for (const char* expected :
       {"RAM per rank = weights 780.0 GB (1559956066048 B / TP 2) + MLA latent 29.0 GB + KDA state 0.23 GB + "
        "vision 2.2 GB + margin 8.0 GB = 819.4 GB",
        "RAM per node = 2 x 819.4 GB = 1638.9 GB of 3958.2 GB usable (4096 GiB x 0.90): fits",
        "t_memory = 68.49 GB per rank / (204.8 GB/s per rank x 0.70 efficiency) = 477.8 ms",
        "t_network = 278 all-reduces x 2 ring steps x 10 us (ranks on one node) = 5.6 ms",
        "decode = 1 / (477.8 ms + 5.6 ms) = 2.07 tokens/s per sequence (batch 1)", "CPU, 2 NUMA",
        "dram-derivation:"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  const json j = json::parse(FormatPlan(*plan, PlanFormat::kJson));
  EXPECT_EQ(j["targets"][0]["cpu"]["tensor_parallel_size"], 2);
  EXPECT_NEAR(j["targets"][0]["cpu"]["decode"]["tokens_per_second"].get<double>(), 2.069, 1e-3);
}

TEST(CpuPlanTest, RefusesVllmOnACpuInstanceAndPointsAtTheK3Engine) {
  PlanOptions o = CpuOptions("aws-eks", "x2iedn.32xlarge");
  o.engine = Engine::kVllm;
  auto plan = BuildPlan(TestCatalog(), o);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--instance x2iedn.32xlarge is a CPU-only instance"),
            std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("--engine k3"), std::string::npos) << plan.status().message();
}

TEST(CpuPlanTest, RefusesAModelThatDoesNotFitNamingTheRamAndTheFix) {
  PlanOptions o = CpuOptions("aws-eks", "x2iedn.32xlarge");
  o.cpu.tensor_parallel_size = 2;  // at most 2 nodes
  o.concurrency = 200;             // 200 x 29 GB of MLA latent on every rank
  auto plan = BuildPlan(TestCatalog(), o);
  ASSERT_FALSE(plan.ok());
  const std::string& m = plan.status().message();
  EXPECT_NE(m.find("--instance x2iedn.32xlarge: kimi-k3 does not fit"), std::string::npos) << m;
  EXPECT_NE(m.find("GB of RAM per node"), std::string::npos) << m;
  EXPECT_NE(m.find("--concurrency"), std::string::npos) << m;
  EXPECT_NE(m.find("ram_gib"), std::string::npos) << m;
}

TEST(CpuPlanTest, RefusesATensorParallelSizeThatDoesNotDivideTheHeads) {
  PlanOptions o = CpuOptions("aws-eks", "x2iedn.32xlarge");
  o.cpu.tensor_parallel_size = 5;
  auto plan = BuildPlan(TestCatalog(), o);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--tensor-parallel-size 5: does not divide the 96 heads"),
            std::string::npos)
      << plan.status().message();
}

struct CpuRenderCase {
  std::string target;
  std::string instance;
};

RenderOptions CpuRenderOptions(const CpuRenderCase& c) {
  RenderOptions o;
  o.target = c.target;
  o.engine = Engine::kK3;
  o.image = "registry.example/k3:test";
  o.plan.instance = c.instance;
  if (c.target == "alibaba-ack" || c.target == "alibaba-pai-eas") {
    o.weights = "oss://kimi/Kimi-K3";
    o.region = "cn-hangzhou";
  }
  return o;
}

std::map<std::string, std::string> RenderCpu(const CpuRenderCase& c) {
  auto files = Render(TestCatalog(), CpuRenderOptions(c));
  EXPECT_TRUE(files.ok()) << c.target << " " << c.instance << ": " << files.status().ToString();
  std::map<std::string, std::string> out;
  if (files.ok()) {
    for (const RenderedFile& f : *files) out[f.path] = f.content;
  }
  return out;
}

// The pod spec and the container that serves HTTP, for Deployment / LeaderWorkerSet / InferenceService.
std::pair<json, json> ServingPod(const std::map<std::string, std::string>& files) {
  for (const auto& [path, text] : files) {
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".yaml") != 0) continue;
    for (json& doc : testing::YamlDocsAsJson(text, path)) {
      const std::string kind = doc.value("kind", "");
      json pod;
      if (kind == "Deployment" &&
          doc["metadata"]["labels"].value("app.kubernetes.io/component", "") == "serving")
        pod = doc["spec"]["template"]["spec"];
      if (kind == "LeaderWorkerSet") pod = doc["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"];
      if (kind == "InferenceService") pod = doc["spec"]["predictor"];
      if (!pod.is_null()) return {pod, pod["containers"][0]};
    }
  }
  ADD_FAILURE() << "no serving workload";
  return {json::object(), json::object()};
}

class CpuRenderTest : public ::testing::TestWithParam<CpuRenderCase> {};

TEST_P(CpuRenderTest, RendersManifestsThatRunAsRenderedAndLintClean) {
  const CpuRenderCase& c = GetParam();
  const auto files = RenderCpu(c);
  ASSERT_FALSE(files.empty());
  PlanOptions po = CpuOptions(c.target, c.instance);
  auto plan = PlanOne(po);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const Instance& instance = plan->instance;

  for (const auto& [path, text] : files) {
    EXPECT_EQ(text.find("nvidia.com/gpu"), std::string::npos) << path << " asks for a GPU on a CPU node";
    EXPECT_EQ(text.find("accelerator"), std::string::npos) << path;
  }
  const auto [pod, container] = ServingPod(files);
  EXPECT_EQ(pod["nodeSelector"]["node.kubernetes.io/instance-type"], c.instance);
  EXPECT_FALSE(pod.contains("tolerations"));
  const json& resources = container["resources"];
  EXPECT_FALSE(resources["limits"].contains("nvidia.com/gpu"));
  const auto gib = [](const json& q) {
    return std::stod(q.get<std::string>().substr(0, q.get<std::string>().size() - 2));
  };
  const double request = gib(resources["requests"]["memory"]);
  const double limit = gib(resources["limits"]["memory"]);
  EXPECT_GE(request * 1073741824.0, plan->cpu.ram.node_need_gb * 1e9);
  EXPECT_LE(request, limit);
  EXPECT_LE(limit, instance.ram_gib * 0.9);
  EXPECT_LE(std::stoi(resources["requests"]["cpu"].get<std::string>()), instance.vcpu);

  // k3 serve runs the planned ranks: --tensor-parallel-size = TP, in argv or in the shell line.
  const std::string command = container["args"].dump();
  EXPECT_NE(command.find("--tensor-parallel-size"), std::string::npos) << command;
  EXPECT_NE(command.find(std::to_string(plan->layout.tp)), std::string::npos) << command;
  if (plan->layout.nodes > 1) {
    const json lws = testing::FindDoc(files, "LeaderWorkerSet");
    EXPECT_EQ(lws["spec"]["leaderWorkerTemplate"]["size"], plan->layout.nodes);
  }
  if (files.count("setup-cluster.sh")) {
    EXPECT_NE(files.at("setup-cluster.sh").find(c.instance), std::string::npos);
    EXPECT_NE(files.at("cleanup.sh").find("k3cpupool"), std::string::npos);
  }

  LintOptions lint;
  lint.catalog = &TestCatalog();
  lint.image_arch = "multi";
  const std::vector<Finding> findings = LintFiles(files, lint);
  EXPECT_FALSE(HasErrors(findings)) << FormatFindings(findings, false);
  EXPECT_TRUE(findings.empty()) << FormatFindings(findings, false);
}

INSTANTIATE_TEST_SUITE_P(EveryCloud, CpuRenderTest,
                         ::testing::Values(CpuRenderCase{"aws-eks", "x2iedn.32xlarge"},
                                           CpuRenderCase{"aws-eks", "x8g.48xlarge"},
                                           CpuRenderCase{"azure-aks", "Standard_M176ds_4_v3"},
                                           CpuRenderCase{"gcp-gke", "m2-ultramem-208"},
                                           CpuRenderCase{"alibaba-ack", "ecs.re6.52xlarge"},
                                           CpuRenderCase{"k8s", "ecs.re6.26xlarge"}),
                         [](const ::testing::TestParamInfo<CpuRenderCase>& info) {
                           std::string name = info.param.target + "_" + info.param.instance;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(CpuRenderRefusalTest, GpuEndpointTargetsRefuseACpuInstance) {
  RenderOptions o = CpuRenderOptions({"alibaba-pai-eas", "ecs.re6.52xlarge"});
  auto files = Render(TestCatalog(), o);
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("is CPU-only"), std::string::npos) << files.status().message();
  EXPECT_NE(files.status().message().find("alibaba-ack"), std::string::npos) << files.status().message();
}

TEST(CpuRenderRefusalTest, VllmOnACpuInstanceIsRefusedByRenderToo) {
  RenderOptions o = CpuRenderOptions({"aws-eks", "x2iedn.32xlarge"});
  o.engine = Engine::kVllm;
  o.image.clear();
  auto files = Render(TestCatalog(), o);
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("--engine k3"), std::string::npos) << files.status().message();
}

TEST(CpuRenderRefusalTest, MultiNodeCpuPlanOnAckIsALeaderWorkerSet) {
  RenderOptions o = CpuRenderOptions({"alibaba-ack", "ecs.re6.26xlarge"});
  auto files = Render(TestCatalog(), o);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  bool lws = false;
  for (const RenderedFile& f : *files) lws |= f.content.find("kind: LeaderWorkerSet") != std::string::npos;
  EXPECT_TRUE(lws);
}

}  // namespace
}  // namespace k3::deploy
