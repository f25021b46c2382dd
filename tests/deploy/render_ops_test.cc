// k3 render --autoscale / --monitoring (render_ops.h): the objects per target and engine, validated strictly
// against the vendored KEDA / Prometheus Operator / GMP CRDs (tests/deploy/crds) through `k3 lint`'s own
// --schema-dir path; the refusals (MIN 0, cold start above --max-cold-start, targets without a path);
// cold start in NOTES; autoscaler objects deleted first; a shared volume when MAX groups mount it; and the
// dashboard's and autoscalers' metric names against the names vLLM exports. (That `k3 serve` exports every
// one of them is checked over a real socket by tests/e2e/dashboard_metrics_test.py.)
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "src/deploy/lint.h"
#include "src/deploy/render_ops.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using Json = nlohmann::json;
using testing::TestCatalog;

RenderOptions Options(const std::string& target, Engine engine, const std::string& range) {
  RenderOptions o = testing::TestRenderOptions(target, engine, "", false);
  if (target == "alibaba-pai-eas") {
    o.weights = "oss://kimi/Kimi-K3";
    o.region = "cn-hangzhou";
  }
  if (!range.empty()) {
    EXPECT_TRUE(ParseAutoscaleRange(range, o.autoscale).ok()) << range;
  }
  return o;
}

std::map<std::string, std::string> RenderOk(const RenderOptions& o) {
  auto files = Render(TestCatalog(), o);
  EXPECT_TRUE(files.ok()) << o.target << ": " << files.status().ToString();
  std::map<std::string, std::string> out;
  if (files.ok()) {
    for (const RenderedFile& f : *files) out[f.path] = f.content;
  }
  return out;
}

std::string Refusal(const RenderOptions& o) {
  auto files = Render(TestCatalog(), o);
  EXPECT_FALSE(files.ok()) << o.target << " rendered although it should be refused";
  return files.ok() ? "" : files.status().message();
}

std::vector<Finding> LintWithOpsCrds(const std::map<std::string, std::string>& files) {
  LintOptions lo;
  lo.catalog = &TestCatalog();
  lo.schema_dir = testing::SourceDir() + "/tests/deploy/crds";
  return LintFiles(files, lo);
}

std::string Errors(const std::vector<Finding>& findings) {
  std::string s;
  for (const Finding& f : findings) {
    if (f.severity == Severity::kError)
      s += f.file + ":" + std::to_string(f.line) + " " + f.rule + " " + f.message + "\n";
  }
  return s;
}

// The metric names vLLM's v1 engine exports (vllm/v1/metrics/loggers.py, PrometheusStatLogger), as series:
// counters with _total, histograms with _bucket / _sum / _count.
const std::set<std::string>& VllmSeries() {
  static const std::set<std::string> kSeries = [] {
    std::set<std::string> s = {
        "vllm:num_requests_running",       "vllm:num_requests_waiting",    "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:num_preemptions_total",
        "vllm:prompt_tokens_total",        "vllm:generation_tokens_total", "vllm:request_success_total"};
    for (const char* h : {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                          "vllm:e2e_request_latency_seconds"}) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) s.insert(std::string(h) + suffix);
    }
    return s;
  }();
  return kSeries;
}

std::set<std::string> MetricNamesIn(const std::string& promql) {
  std::set<std::string> names;
  static const std::regex kName("vllm:[a-z0-9_]+");
  for (auto it = std::sregex_iterator(promql.begin(), promql.end(), kName); it != std::sregex_iterator();
       ++it) {
    names.insert(it->str());
  }
  return names;
}

TEST(RenderOpsTest, ParsesTheRange) {
  AutoscaleOptions a;
  EXPECT_TRUE(ParseAutoscaleRange("0:4", a).ok());
  EXPECT_EQ(a.min, 0);
  EXPECT_EQ(a.max, 4);
  for (const char* bad : {"4", "2:1", "1:0", "0:0", "2:2", "-1:3", "a:b", "1:", ":3", "1:3:5", "1: 3"}) {
    AutoscaleOptions b;
    Status s = ParseAutoscaleRange(bad, b);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("--autoscale"), std::string::npos) << s.message();
  }
}

TEST(RenderOpsTest, KedaScalesTheWorkloadAndValidatesStrictly) {
  // kimi-k3 on azure-aks is a two-node LeaderWorkerSet; kimi-k3 on aws-eks one node (a Deployment).
  for (const std::string target : {"aws-eks", "azure-aks", "gcp-gke", "k8s"}) {
    for (Engine engine : {Engine::kVllm, Engine::kK3}) {
      RenderOptions o = Options(target, engine, "1:3");
      o.monitoring = true;
      auto files = RenderOk(o);
      ASSERT_TRUE(files.count("autoscale.yaml")) << target;
      ASSERT_TRUE(files.count("monitoring.yaml")) << target;
      ASSERT_TRUE(files.count("grafana-dashboard.json")) << target;
      const Json so = testing::FindDoc(files, "ScaledObject");
      const bool lws =
          files.begin() != files.end() && std::any_of(files.begin(), files.end(), [](const auto& f) {
            return f.second.find("kind: LeaderWorkerSet") != std::string::npos;
          });
      EXPECT_EQ(so["spec"]["scaleTargetRef"]["kind"], lws ? "LeaderWorkerSet" : "Deployment") << target;
      EXPECT_EQ(so["spec"]["scaleTargetRef"]["name"], "kimi-k3");
      EXPECT_EQ(so["spec"]["minReplicaCount"], 1);
      EXPECT_EQ(so["spec"]["maxReplicaCount"], 3);
      std::set<std::string> queried;
      for (const Json& trigger : so["spec"]["triggers"]) {
        EXPECT_EQ(trigger["type"], "prometheus");
        for (const std::string& m : MetricNamesIn(trigger["metadata"]["query"])) queried.insert(m);
        EXPECT_NE(trigger["metadata"]["query"].get<std::string>().find("model_name=\"Kimi-K3\""),
                  std::string::npos);
      }
      EXPECT_EQ(queried, (std::set<std::string>{"vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}));
      // The scrape object selects the pods that serve HTTP: LWS leaders only.
      const Json scrape = testing::FindDoc(files, target == "gcp-gke" ? "PodMonitoring" : "PodMonitor");
      if (lws) {
        EXPECT_EQ(scrape["spec"]["selector"]["matchLabels"]["role"], "leader") << target;
      }
      const std::vector<Finding> findings = LintWithOpsCrds(files);
      EXPECT_EQ(Errors(findings), "") << target;
    }
  }
}

TEST(RenderOpsTest, StrictCrdsCatchABrokenScaledObjectAndPodMonitor) {
  RenderOptions o = Options("k8s", Engine::kVllm, "1:2");
  auto files = RenderOk(o);
  std::string broken = files["autoscale.yaml"];
  broken.replace(broken.find("pollingInterval:"), 16, "pollingIntervall:");
  auto copy = files;
  copy["autoscale.yaml"] = broken;
  EXPECT_NE(Errors(LintWithOpsCrds(copy)).find("K3-CRD-001"), std::string::npos);
  copy = files;
  std::string monitor = files["monitoring.yaml"];
  monitor.replace(monitor.find("portNumber:"), 11, "portNumbr:");
  copy["monitoring.yaml"] = monitor;
  EXPECT_NE(Errors(LintWithOpsCrds(copy)).find("K3-CRD-001"), std::string::npos);
}

TEST(RenderOpsTest, HpaReadsWhatTheAdapterServes) {
  RenderOptions o = Options("azure-aks", Engine::kK3, "1:2");
  o.autoscale.autoscaler = "hpa";
  auto files = RenderOk(o);
  ASSERT_TRUE(files.count("prometheus-adapter-values.yaml"));
  const Json hpa = testing::FindDoc(files, "HorizontalPodAutoscaler");
  EXPECT_EQ(hpa["apiVersion"], "autoscaling/v2");
  EXPECT_EQ(hpa["spec"]["scaleTargetRef"]["kind"], "LeaderWorkerSet");
  const Json values = testing::YamlDocsAsJson(files["prometheus-adapter-values.yaml"], "values")[0];
  std::set<std::string> served;
  for (const Json& rule : values["rules"]["custom"]) {
    const std::string series =
        rule["seriesQuery"].get<std::string>().substr(0, rule["seriesQuery"].get<std::string>().find('{'));
    const std::regex matches(rule["name"]["matches"].get<std::string>());
    served.insert(std::regex_replace(series, matches, "vllm_$1"));
    EXPECT_EQ(rule["name"]["as"], "vllm_${1}");
    EXPECT_TRUE(VllmSeries().count(series)) << series;
  }
  std::set<std::string> read;
  for (const Json& m : hpa["spec"]["metrics"]) read.insert(m["pods"]["metric"]["name"]);
  EXPECT_EQ(read, served);
  EXPECT_EQ(values["prometheus"]["url"], "http://kube-prometheus-stack-prometheus.monitoring.svc");
  EXPECT_EQ(values["prometheus"]["port"], 9090);
  EXPECT_NE(files["NOTES.md"].find("prometheus-adapter prometheus-community/prometheus-adapter"),
            std::string::npos);
  EXPECT_EQ(Errors(LintWithOpsCrds(files)), "");
}

TEST(RenderOpsTest, DashboardAndAutoscalersQueryOnlyVllmSeries) {
  RenderOptions o = Options("gcp-gke", Engine::kVllm, "1:2");
  o.monitoring = true;
  auto files = RenderOk(o);
  const Json dashboard = Json::parse(files["grafana-dashboard.json"]);
  std::set<std::string> titles;
  int queries = 0;
  for (const Json& panel : dashboard["panels"]) {
    titles.insert(panel["title"]);
    for (const Json& target : panel["targets"]) {
      for (const std::string& name : MetricNamesIn(target["expr"])) {
        EXPECT_TRUE(VllmSeries().count(name)) << name << " in " << panel["title"];
        ++queries;
      }
    }
  }
  EXPECT_GE(queries, 14);
  for (const char* t : {"Time to first token", "Inter-token latency", "Requests waiting and running",
                        "KV-cache usage", "Prefix-cache hit rate", "Tokens per second"}) {
    EXPECT_TRUE(titles.count(t)) << t;
  }
}

TEST(RenderOpsTest, GkeQueriesThroughTheGmpFrontend) {
  RenderOptions o = Options("gcp-gke", Engine::kVllm, "1:2");
  o.name_space = "team-a";
  auto files = RenderOk(o);
  const Json so = testing::FindDoc(files, "ScaledObject");
  EXPECT_EQ(so["spec"]["triggers"][0]["metadata"]["serverAddress"],
            "http://kimi-k3-gmp-frontend.team-a.svc:9090");
  const std::string monitoring = files["monitoring.yaml"];
  EXPECT_NE(monitoring.find("kind: PodMonitoring"), std::string::npos);
  EXPECT_NE(monitoring.find("name: kimi-k3-gmp-frontend"), std::string::npos);
  EXPECT_NE(files["NOTES.md"].find("kubectl create configmap kimi-k3-gcp-project --namespace team-a"),
            std::string::npos);
  // A --prometheus-url replaces the frontend.
  o.autoscale.prometheus_url = "http://prometheus.example:9090";
  files = RenderOk(o);
  EXPECT_EQ(files["monitoring.yaml"].find("gmp-frontend"), std::string::npos);
  EXPECT_EQ(testing::FindDoc(files, "ScaledObject")["spec"]["triggers"][0]["metadata"]["serverAddress"],
            "http://prometheus.example:9090");
}

TEST(RenderOpsTest, NotesStateTheColdStartAndApplyBeforeTheWatch) {
  auto files = RenderOk(Options("aws-eks", Engine::kVllm, "1:3"));
  const std::string& notes = files["NOTES.md"];
  // 1.56 TB at the default 10 Gbps: 1,248 s = 20m48s.
  EXPECT_NE(notes.find("cold start of 20m48s"), std::string::npos) << notes;
  const size_t apply = notes.find("kubectl apply -f autoscale.yaml");
  const size_t watch = notes.find("-svc -w");
  ASSERT_NE(apply, std::string::npos);
  ASSERT_NE(watch, std::string::npos);
  EXPECT_LT(notes.find("helm upgrade --install keda kedacore/keda"), apply);
  EXPECT_LT(notes.find("kubectl apply -f monitoring.yaml"), apply);
  EXPECT_LT(apply, watch);
}

TEST(RenderOpsTest, CleanupDeletesTheAutoscalerFirst) {
  RenderOptions o = Options("k8s", Engine::kVllm, "1:2");
  o.monitoring = true;
  auto files = RenderOk(o);
  const std::string& cleanup = files["cleanup.sh"];
  const size_t autoscaler = cleanup.find("kubectl delete -f autoscale.yaml");
  ASSERT_NE(autoscaler, std::string::npos);
  EXPECT_LT(autoscaler, cleanup.find("kubectl delete -f kimi-k3.yaml"));
  EXPECT_NE(cleanup.find("kubectl delete -f monitoring.yaml"), std::string::npos);
  EXPECT_NE(cleanup.find("kubectl delete configmap kimi-k3-grafana-dashboard"), std::string::npos);
}

TEST(RenderOpsTest, MaxGroupsShareTheWeightsVolume) {
  // One EKS node, one replica: an EBS (ReadWriteOnce) volume; autoscaling to 3 replicas: EFS, ReadWriteMany.
  auto plain = RenderOk(Options("aws-eks", Engine::kVllm, ""));
  EXPECT_EQ(testing::FindDoc(plain, "PersistentVolumeClaim")["spec"]["accessModes"][0], "ReadWriteOnce");
  auto scaled = RenderOk(Options("aws-eks", Engine::kVllm, "1:3"));
  const Json pvc = testing::FindDoc(scaled, "PersistentVolumeClaim");
  EXPECT_EQ(pvc["spec"]["accessModes"][0], "ReadWriteMany");
  EXPECT_EQ(pvc["spec"]["storageClassName"], "efs-sc");
  EXPECT_NE(scaled["setup-cluster.sh"].find("efs-sc"), std::string::npos);
}

TEST(RenderOpsTest, PaiEasAutoscalerBody) {
  RenderOptions o = Options("alibaba-pai-eas", Engine::kVllm, "1:4");
  auto files = RenderOk(o);
  const Json as = Json::parse(files["service.json"])["autoscaler"];
  EXPECT_EQ(as["min"], 1);
  EXPECT_EQ(as["max"], 4);
  EXPECT_EQ(as["scaleStrategies"][0]["metricName"], "qps");
  EXPECT_FALSE(as["behavior"].contains("onZero"));
  EXPECT_GE(as["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 300);
  EXPECT_EQ(files.count("autoscale.yaml"), 0u);
  EXPECT_NE(files["NOTES.md"].find("cold start of"), std::string::npos);
}

TEST(RenderOpsTest, ScaleToZeroOnlyWithinTheAcceptedColdStart) {
  // kimi-linear-48b on PAI-EAS (TestRenderOptions' one-instance model): its plan's load time is the cold
  // start.
  RenderOptions o = Options("alibaba-pai-eas", Engine::kVllm, "0:2");
  std::string why = Refusal(o);
  EXPECT_NE(why.find("--max-cold-start"), std::string::npos) << why;
  EXPECT_NE(why.find("--autoscale 1:2"), std::string::npos) << why;
  o.autoscale.max_cold_start_seconds = 1;
  why = Refusal(o);
  EXPECT_NE(why.find("above --max-cold-start 1"), std::string::npos) << why;
  EXPECT_NE(why.find("--autoscale 1:2"), std::string::npos) << why;
  o.autoscale.max_cold_start_seconds = 100000;
  auto files = RenderOk(o);
  const Json as = Json::parse(files["service.json"])["autoscaler"];
  EXPECT_EQ(as["min"], 0);
  EXPECT_GE(as["behavior"]["onZero"]["scaleDownGracePeriodSeconds"], 600);
  EXPECT_EQ(as["behavior"]["onZero"]["scaleUpActivationReplicas"], 1);
  EXPECT_NE(files["NOTES.md"].find("Scale to zero"), std::string::npos);
  EXPECT_EQ(files["NOTES.md"].find("autoscaler min stays >= 1"), std::string::npos);
}

TEST(RenderOpsTest, Refusals) {
  // Kubernetes: nothing exports the queue at zero pods.
  EXPECT_NE(Refusal(Options("k8s", Engine::kVllm, "0:2")).find("--autoscale 1:2"), std::string::npos);
  // Targets whose scaling / metrics belong to the platform.
  for (const std::string target : {"aws-hyperpod", "azure-ml", "gcp-vertex", "alibaba-ack"}) {
    if (!testing::Renders(target, Engine::kVllm)) continue;
    RenderOptions o = Options(target, Engine::kVllm, "1:2");
    if (target == "alibaba-ack") {
      o.weights = "oss://kimi/Kimi-K3";
      o.region = "cn-hangzhou";
    }
    if (target == "aws-hyperpod") o.region = "us-east-1";
    EXPECT_NE(Refusal(o).find("--target"), std::string::npos) << target;
    o.autoscale = {};
    o.monitoring = true;
    EXPECT_NE(Refusal(o).find("--monitoring"), std::string::npos) << target;
  }
  RenderOptions eas = Options("alibaba-pai-eas", Engine::kVllm, "");
  eas.monitoring = true;
  EXPECT_NE(Refusal(eas).find("--monitoring"), std::string::npos);
  // --replicas outside the range, an unknown autoscaler, companions without --autoscale.
  RenderOptions o = Options("k8s", Engine::kVllm, "2:4");
  EXPECT_NE(Refusal(o).find("--replicas 2"), std::string::npos);
  o = Options("k8s", Engine::kVllm, "1:4");
  o.autoscale.autoscaler = "vpa";
  EXPECT_NE(Refusal(o).find("--autoscaler 'vpa'"), std::string::npos);
  o = Options("k8s", Engine::kVllm, "");
  o.autoscale.max_cold_start_seconds = 600;
  EXPECT_NE(Refusal(o).find("only with --autoscale"), std::string::npos);
}

}  // namespace
}  // namespace k3::deploy
