// Catalog and planner: the guide's §2.2 fit table and §2.3 node counts reproduced from catalog data, costs
// only from catalog prices with sources, probe budgets from the load time, checkpoint sizing from config.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/deploy/catalog_data.h"
#include "src/deploy/checkpoint_size.h"
#include "src/deploy/plan.h"
#include "src/deploy/plan_format.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using testing::TestCatalog;

Plan MustPlan(const PlanOptions& options) {
  auto plan = BuildPlan(TestCatalog(), options);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : Plan{};
}

const TargetPlan& For(const Plan& plan, const std::string& id) {
  for (const TargetPlan& t : plan.targets) {
    if (t.target.id == id) return t;
  }
  ADD_FAILURE() << "no plan for " << id;
  return plan.targets.front();
}

TEST(CatalogTest, EmbeddedCatalogParsesAndEveryPriceHasASource) {
  const Catalog& c = TestCatalog();
  EXPECT_EQ(c.targets.size(), 9u);
  for (const Instance& in : c.instances) {
    EXPECT_TRUE(!in.prices.empty() || !in.price_note.empty()) << in.id;
    for (const Price& p : in.prices) {
      EXPECT_TRUE(c.sources.count(p.source)) << in.id;
      EXPECT_FALSE(p.date.empty()) << in.id;
      EXPECT_GT(p.usd_per_hour, 0) << in.id;
    }
  }
}

std::map<std::string, std::string> EmbeddedFiles() {
  std::map<std::string, std::string> files;
  for (const char* name : {"sources", "gpus", "instances", "models", "targets"}) {
    files[name] = std::string(EmbeddedCatalogFile(name));
  }
  return files;
}

TEST(CatalogTest, ErrorsNameTheFileAndField) {
  auto files = EmbeddedFiles();
  auto instances = nlohmann::json::parse(files["instances"]);
  instances["instances"][0].erase("gpu_count");
  files["instances"] = instances.dump();
  auto parsed = ParseCatalog(files);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("instances.json: instances[0].gpu_count: missing"),
            std::string::npos)
      << parsed.status().message();

  files = EmbeddedFiles();
  instances = nlohmann::json::parse(files["instances"]);
  instances["instances"][1]["prices"][0]["source"] = "nowhere";
  files["instances"] = instances.dump();
  parsed = ParseCatalog(files);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("'nowhere' is not in sources.json"), std::string::npos);

  files = EmbeddedFiles();
  instances = nlohmann::json::parse(files["instances"]);
  instances["instances"][2]["prices"] = nlohmann::json::array();
  instances["instances"][2].erase("price_note");
  files["instances"] = instances.dump();
  parsed = ParseCatalog(files);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("no prices and no price_note"), std::string::npos);

  files = EmbeddedFiles();
  files["gpus"] = "{not json";
  EXPECT_FALSE(ParseCatalog(files).ok());
}

TEST(PlanTest, ReproducesTheGuideFitTable) {
  Plan plan = MustPlan({});
  // Guide §2.2: configuration, total VRAM, meets.
  const std::vector<std::tuple<std::string, int, double, bool>> guide = {
      {"B300", 8, 2304, true},  {"MI355X", 8, 2304, true}, {"H200", 16, 2256, true}, {"B200", 16, 2880, true},
      {"H100", 32, 2560, true}, {"B200", 8, 1440, false},  {"H200", 8, 1128, false}};
  ASSERT_EQ(plan.fit_table.size(), guide.size());
  for (size_t i = 0; i < guide.size(); ++i) {
    const FitRow& row = plan.fit_table[i];
    EXPECT_EQ(row.config.gpu, std::get<0>(guide[i]));
    EXPECT_EQ(row.config.count, std::get<1>(guide[i]));
    EXPECT_DOUBLE_EQ(row.total_vram_gb, std::get<2>(guide[i]));
    EXPECT_EQ(row.per_gpu.fits, std::get<3>(guide[i])) << row.config.count << "x " << row.config.gpu;
  }
  const std::string table = FormatPlan(plan, PlanFormat::kMarkdown);
  EXPECT_NE(table.find("| 16x H200 | 2256 GB | TP=8 PP=2 |"), std::string::npos) << table;
}

TEST(PlanTest, ReproducesTheGuideNodeCounts) {
  Plan plan = MustPlan({});
  // Guide §2.3: AWS 1 node TP=8; Azure / GCP 2 nodes TP=8 across nodes; Alibaba "2 or more".
  EXPECT_EQ(For(plan, "aws-hyperpod").layout.nodes, 1);
  EXPECT_EQ(For(plan, "aws-hyperpod").layout.tp, 8);
  EXPECT_EQ(For(plan, "azure-aks").layout.nodes, 2);
  EXPECT_EQ(For(plan, "azure-aks").layout.tp, 8);
  EXPECT_EQ(For(plan, "azure-aks").instance.cpu_arch, "arm64");
  EXPECT_EQ(For(plan, "gcp-gke").layout.nodes, 2);
  EXPECT_EQ(For(plan, "gcp-gke").layout.tp, 8);
  // ebmgn8v has 96 GB GPUs: 2 x 768 GB does not hold 1.56 TB + cache, 3 nodes do (spec/instances.md).
  EXPECT_EQ(For(plan, "alibaba-ack").layout.nodes, 3);
  EXPECT_EQ(For(plan, "alibaba-ack").layout.pp, 3);
  // The guide's alternative: TP=4 x PP=2.
  PlanOptions pp;
  pp.target = "azure-aks";
  pp.prefer_pp = true;
  Plan alt = MustPlan(pp);
  EXPECT_EQ(alt.targets[0].layout.tp, 4);
  EXPECT_EQ(alt.targets[0].layout.pp, 2);
}

TEST(PlanTest, CostsComeFromCatalogPrices) {
  Plan plan = MustPlan({});
  const TargetPlan& eks = For(plan, "aws-eks");
  ASSERT_TRUE(eks.cost.known);
  EXPECT_DOUBLE_EQ(eks.cost.low_per_hour, 59);
  EXPECT_DOUBLE_EQ(eks.cost.high_per_hour, 142.416);
  EXPECT_EQ(FormatCostPerMonth(eks.cost), "USD 43,070-103,964");  // guide: USD 43,000-104,000 per month
  for (const Price& p : eks.cost.prices) EXPECT_FALSE(p.source.empty());
  const TargetPlan& aks = For(plan, "azure-aks");
  EXPECT_FALSE(aks.cost.known);
  EXPECT_EQ(FormatCostPerHour(aks.cost), "unknown");
  EXPECT_NE(aks.cost.unknown_reason.find("not published"), std::string::npos);
  // 2 x p5en (16x H200) on-demand: inside the guide's USD 46,000-117,000 per month.
  PlanOptions h200;
  h200.target = "aws-eks";
  h200.instance = "p5en.48xlarge";
  Plan p = MustPlan(h200);
  EXPECT_EQ(p.targets[0].layout.nodes, 2);
  EXPECT_NEAR(p.targets[0].cost.low_per_hour * CostRange::kHoursPerMonth, 92412.16, 0.01);
}

TEST(PlanTest, TargetConstraintsWarn) {
  PlanOptions vertex;
  vertex.target = "gcp-vertex";
  Plan v = MustPlan(vertex);
  EXPECT_EQ(v.targets[0].cost.billed_instances, 18);
  ASSERT_FALSE(v.targets[0].warnings.empty());
  EXPECT_NE(v.targets[0].warnings[0].find("18"), std::string::npos);

  PlanOptions pool;
  pool.target = "gcp-gke";
  pool.replicas = 10;
  Plan g = MustPlan(pool);
  ASSERT_EQ(g.targets[0].warnings.size(), 1u);
  EXPECT_NE(g.targets[0].warnings[0].find("node-pool limit of 18"), std::string::npos);

  PlanOptions hp;
  hp.target = "aws-hyperpod";
  hp.instance = "p5en.48xlarge";
  Plan h = MustPlan(hp);
  EXPECT_EQ(h.targets[0].warnings.size(), 2u);  // no ml. prefix; two instances per replica
}

TEST(PlanTest, BadFlagsAreErrorsNamingTheFlag) {
  PlanOptions o;
  o.target = "mars";
  auto plan = BuildPlan(TestCatalog(), o);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--target 'mars'"), std::string::npos);
  o = {};
  o.target = "azure-aks";
  o.instance = "p5en.48xlarge";
  EXPECT_FALSE(BuildPlan(TestCatalog(), o).ok());
  o = {};
  o.model = "/nonexistent/model";
  EXPECT_FALSE(BuildPlan(TestCatalog(), o).ok());
  o = {};
  o.concurrency = 0;
  EXPECT_FALSE(BuildPlan(TestCatalog(), o).ok());
  o = {};
  o.model = "kimi-linear-48b";  // no context length in the catalog
  EXPECT_FALSE(BuildPlan(TestCatalog(), o).ok());
  o.max_model_len = 131072;
  EXPECT_TRUE(BuildPlan(TestCatalog(), o).ok());
}

TEST(PlanTest, BandwidthAndProbeBudget) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("10Gbps"), 1e10);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("100Mbps"), 1e8);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("2GB/s"), 1.6e10);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("850MB/s"), 6.8e9);  // k3 serve logs its measured load rate so
  EXPECT_DOUBLE_EQ(*ParseBandwidth("1GiB/s"), 8.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(*ParseBandwidth("512MiB/s"), 8.0 * (1 << 29));
  for (const char* bad : {"", "fast", "10", "-1Gbps", "0Gbps", "1e999Gbps", "Gbps"}) {
    EXPECT_FALSE(ParseBandwidth(bad).ok()) << bad;
  }
  ProbeBudget p = DeriveProbeBudget(1559956066048, 1e10);
  EXPECT_NEAR(p.load_seconds, 1247.96, 0.01);
  EXPECT_EQ(p.startup_failure_threshold, 104);  // ceil((2 x 1248 + 600) / 30)
  EXPECT_EQ(p.startup_budget_seconds, 3120);
  // 100 Mbps (the guide's "30+ hours"): the budget grows with the load.
  EXPECT_GT(DeriveProbeBudget(1559956066048, 1e8).load_seconds, 30 * 3600);
}

class CheckpointDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("k3_plan_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::filesystem::path dir_;
};

std::string K3Config() {
  nlohmann::json full = nlohmann::json::array();
  for (int i = 4; i <= 92; i += 4) full.push_back(i);
  full.push_back(93);
  nlohmann::json config = {{"model_type", "kimi_k3"},
                           {"text_config",
                            {{"num_hidden_layers", 93},
                             {"kv_lora_rank", 512},
                             {"qk_rope_head_dim", 64},
                             {"max_position_embeddings", 1048576},
                             {"linear_attn_config",
                              {{"num_heads", 96},
                               {"head_dim", 128},
                               {"short_conv_kernel_size", 4},
                               {"full_attn_layers", full}}}}}};
  return config.dump();
}

TEST_F(CheckpointDir, SizesFromConfigAndIndexLikeSpecSection6) {
  Write("config.json", K3Config());
  Write("model.safetensors.index.json", R"({"metadata": {"total_size": 1559956066048}, "weight_map": {}})");
  auto m = ModelSpecFromCheckpoint(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->MlaBytesPerToken(), 27648);                // spec §6
  EXPECT_EQ(m->kda_state_bytes_per_sequence, 464633856);  // spec §6
  EXPECT_EQ(m->weight_bytes, 1559956066048);
  PlanOptions o;
  o.model = dir_.string();
  o.target = "azure-aks";
  Plan plan = MustPlan(o);
  EXPECT_EQ(plan.targets[0].layout.nodes, 2);
}

TEST_F(CheckpointDir, SizesFromSafetensorsFilesWithoutIndex) {
  Write("config.json", K3Config());
  Write("model.safetensors", std::string(1000, 'x'));
  auto m = ModelSpecFromCheckpoint(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->weight_bytes, 1000);
}

TEST_F(CheckpointDir, BadConfigNamesFileAndField) {
  Write("config.json", R"({"model_type": "kimi_k3", "text_config": {"num_hidden_layers": 93}})");
  auto m = ModelSpecFromCheckpoint(dir_.string());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("config.json"), std::string::npos);
  EXPECT_NE(m.status().message().find("linear_attn_config"), std::string::npos);
  Write("config.json", "[1, 2");
  EXPECT_FALSE(ModelSpecFromCheckpoint(dir_.string()).ok());
}

// K3's published tower from its widths (vision.md §1): hidden 1024, 27 layers, qkv 1536, MLP 4096, patch 14,
// positions 64 x 64, merge 2 x 2, text 7168, all bias-free:
//   tower     = 3 x 14^2 x 1024 (602,112) + 4096 x 1024 (4,194,304)
//               + 27 x (2 x 1024 + 4 x 1536 x 1024 + 2 x 1024 x 4096 = 14,682,112) + 1024 = 401,214,464
//   projector = 4096^2 + 4096 x 7168 + 7168                                              =  46,144,512
//   447,358,976 params x 2 B = 894,717,952 B (~0.45 B / 0.9 GB, as published)
// One image of S = 65,536 patches: 2 S h b = 268,435,456 B; attention 4 S q b = 805,306,368 B; MLP
// 2 S I b = 1,073,741,824 B -> peak 1,342,177,280 B; dense scores S^2 b = 8,589,934,592 B per head.
// The catalog's weight bytes are the text checkpoint: every GPU adds the whole tower + one image.
TEST(PlanVisionTest, K3TowerFromItsWidthsOnEveryGpu) {
  PlanOptions o;
  o.target = "aws-eks";
  Plan plan = MustPlan(o);
  ASSERT_TRUE(plan.vision.has_value());
  const VisionPlan& v = *plan.vision;
  EXPECT_EQ(v.tower_params, 401214464);
  EXPECT_EQ(v.projector_params, 46144512);
  EXPECT_EQ(v.weight_bytes(), 894717952);
  EXPECT_FALSE(v.spec.in_weight_bytes);
  EXPECT_EQ(v.hidden_states_bytes, 268435456);
  EXPECT_EQ(v.attention_bytes, 805306368);
  EXPECT_EQ(v.mlp_bytes, 1073741824);
  EXPECT_EQ(v.activation_bytes, 1342177280);
  EXPECT_EQ(v.scores_per_head_bytes, 8589934592);
  EXPECT_EQ(v.activation_dense_bytes, 268435456 + 805306368 + 8589934592);
  const MemoryPerGpu& g = plan.targets[0].per_gpu;
  EXPECT_NEAR(g.vision_gb, 2.236895232, 1e-9);
  EXPECT_NEAR(g.need_gb, g.weights_gb + g.mla_cache_gb + g.kda_state_gb + g.vision_gb + g.overhead_gb, 1e-9);
  for (const FitRow& f : plan.fit_table) EXPECT_NEAR(f.per_gpu.vision_gb, 2.236895232, 1e-9);

  const std::string table = FormatPlan(plan, PlanFormat::kTable);
  EXPECT_NE(table.find("Vision tower: 447.4 M params = tower 401.2 M"), std::string::npos) << table;
  EXPECT_NE(table.find("3 p^2 h + P h + L (2h + 4 q h + 2 h I) + h"), std::string::npos);
  EXPECT_NE(table.find("dense scores would add S^2 b = 8.6 GB per head"), std::string::npos);
  EXPECT_NE(table.find("+ vision 2.2 GB + overhead 8.0 GB"), std::string::npos) << table;
  EXPECT_NE(FormatPlan(plan, PlanFormat::kMarkdown).find("Vision activations of one image"),
            std::string::npos);
  auto json = nlohmann::json::parse(FormatPlan(plan, PlanFormat::kJson));
  EXPECT_EQ(json["vision"]["params"], 447358976);
  EXPECT_EQ(json["vision"]["image_activations"]["peak_bytes"], 1342177280);
  EXPECT_EQ(json["vision"]["image_activations"]["in_patch_limit"], 65536);
  EXPECT_NEAR(json["targets"][0]["per_gpu"]["vision_gb"].get<double>(), 2.236895232, 1e-9);

  // --no-vision: text-only serving drops exactly that term, and says so.
  o.vision = false;
  Plan text = MustPlan(o);
  EXPECT_FALSE(text.vision.has_value());
  EXPECT_TRUE(text.vision_left_out);
  EXPECT_NEAR(g.need_gb - text.targets[0].per_gpu.need_gb, 2.236895232, 1e-9);
  EXPECT_NE(FormatPlan(text, PlanFormat::kTable).find("Vision tower: left out (--no-vision"),
            std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(FormatPlan(text, PlanFormat::kJson))["vision"].is_null());
}

TEST(PlanVisionTest, TextOnlyCatalogModelHasNoTower) {
  PlanOptions o;
  o.model = "kimi-linear-48b";
  o.target = "aws-eks";
  o.max_model_len = 32768;
  Plan plan = MustPlan(o);
  EXPECT_FALSE(plan.vision.has_value());
  EXPECT_FALSE(plan.vision_left_out);
  EXPECT_EQ(plan.targets[0].per_gpu.vision_gb, 0);
  EXPECT_EQ(FormatPlan(plan, PlanFormat::kTable).find("Vision"), std::string::npos);
}

std::string WithVision(const nlohmann::json& vision_config) {
  nlohmann::json config = nlohmann::json::parse(K3Config());
  config["vision_config"] = vision_config;
  return config.dump();
}

// A checkpoint's vision_config (the release's vt_* names) and preprocessor_config.json's patch budget; its
// index already counts the tower, so each of the TP x PP = 8 GPUs adds the tower less its 1/8 share.
TEST_F(CheckpointDir, VisionFromVisionConfigAndPreprocessorConfig) {
  Write("config.json", WithVision({{"vt_hidden_size", 1024},
                                   {"vt_num_hidden_layers", 27},
                                   {"vt_num_attention_heads", 12},
                                   {"vt_intermediate_size", 4096},
                                   {"qkv_hidden_size", 1536},
                                   {"patch_size", 14},
                                   {"init_pos_emb_height", 64},
                                   {"init_pos_emb_width", 64},
                                   {"merge_kernel_size", {2, 2}},
                                   {"text_hidden_size", 7168}}));
  Write("preprocessor_config.json", R"({"media_proc_cfg": {"in_patch_limit": 16384}})");
  Write("model.safetensors.index.json", R"({"metadata": {"total_size": 1560850784000}, "weight_map": {}})");
  PlanOptions o;
  o.model = dir_.string();
  o.target = "aws-eks";
  Plan plan = MustPlan(o);
  ASSERT_TRUE(plan.vision.has_value());
  EXPECT_EQ(plan.vision->params(), 447358976);
  EXPECT_TRUE(plan.vision->spec.in_weight_bytes);
  EXPECT_EQ(plan.vision->max_patches, 16384);
  // 16,384 patches: 2 S h b = 67,108,864 B + 2 S I b = 268,435,456 B.
  EXPECT_EQ(plan.vision->activation_bytes, 67108864 + 268435456);
  ASSERT_EQ(plan.targets[0].layout.tp * plan.targets[0].layout.pp, 8);
  EXPECT_NEAR(plan.targets[0].per_gpu.vision_gb, (894717952.0 * 7 / 8 + 67108864 + 268435456) / 1e9, 1e-9);
  EXPECT_NE(FormatPlan(plan, PlanFormat::kTable).find("already in the checkpoint's weight bytes"),
            std::string::npos);

  // No vision_config: no tower.
  Write("config.json", K3Config());
  EXPECT_FALSE(MustPlan(o).vision.has_value());
  // A bad width names the file and the field.
  Write("config.json", WithVision({{"vt_hidden_size", -3}}));
  auto bad = BuildPlan(TestCatalog(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("config.json"), std::string::npos);
  EXPECT_NE(bad.status().message().find("vt_hidden_size"), std::string::npos) << bad.status().message();
  Write("config.json", WithVision({{"vt_hidden_size", 1024}}));
  bad = BuildPlan(TestCatalog(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("vt_num_hidden_layers"), std::string::npos) << bad.status().message();
}

TEST(PlanFormatTest, JsonCarriesCostsAndSources) {
  PlanOptions o;
  o.target = "aws-eks";
  auto json = nlohmann::json::parse(FormatPlan(MustPlan(o), PlanFormat::kJson));
  EXPECT_EQ(json["targets"][0]["layout"]["tp"], 8);
  EXPECT_DOUBLE_EQ(json["targets"][0]["cost"]["usd_per_hour"][1].get<double>(), 142.416);
  EXPECT_EQ(json["targets"][0]["cost"]["prices"][1]["source"], "K2");
  bool has_k2 = false;
  for (const auto& s : json["sources"]) has_k2 |= s["key"] == "K2";
  EXPECT_TRUE(has_k2);
  EXPECT_FALSE(ParsePlanFormat("xml").ok());
}

}  // namespace
}  // namespace k3::deploy
