// k3 lint rules learned from the deploy dry run (src/deploy/lint_files.cc): each fires, with file:line, on
// rendered output changed back to the defect, and stays quiet on the rendered output itself.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "src/deploy/lint.h"
#include "tests/deploy/deploy_test_util.h"

namespace k3::deploy {
namespace {

using Files = std::map<std::string, std::string>;

LintOptions FilesLintOptions() {
  LintOptions o;
  o.catalog = &testing::TestCatalog();
  return o;
}

// Findings of `rule` (every other rule's findings are ignored, e.g. the arm64 caveat).
std::vector<Finding> Of(const Files& files, const std::string& rule) {
  std::vector<Finding> out;
  for (const Finding& f : LintFiles(files, FilesLintOptions())) {
    if (f.rule == rule) out.push_back(f);
  }
  return out;
}

Files Render(const std::string& target, Engine engine = Engine::kVllm, bool gateway = false, int replicas = 1,
             bool one_node_model = false) {
  testing::Combination c{testing::TestRenderOptions(target, engine, "", gateway), target};
  c.options.replicas = replicas;
  if (one_node_model) {
    c.options.plan.model = "kimi-linear-48b";
    c.options.plan.max_model_len = 131072;
  }
  return testing::RenderCombination(c);
}

Files Replaced(Files files, const std::string& file, const std::string& from, const std::string& to) {
  std::string& text = files[file];
  const size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << file << " has no '" << from << "'";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return files;
}

int LineOf(const std::string& text, const std::string& needle) {
  const size_t pos = text.find(needle);
  EXPECT_NE(pos, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

TEST(LintFilesTest, Vol001WriterAndReaderPathsDiffer) {
  const Files good = Render("azure-aks");
  EXPECT_TRUE(Of(good, "K3-VOL-001").empty());
  const Files bad =
      Replaced(good, "weights.yaml", "--local-dir /mnt/models/Kimi-K3", "--local-dir /mnt/models/hub");
  auto f = Of(bad, "K3-VOL-001");
  ASSERT_EQ(f.size(), 1u) << FormatFindings(f, false);  // the leader (Ray workers name no model)
  EXPECT_EQ(f[0].file, "kimi-k3-azure.yaml");
  EXPECT_GT(f[0].line, 0);
  EXPECT_NE(f[0].message.find("/Kimi-K3"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("/hub"), std::string::npos) << f[0].message;
}

TEST(LintFilesTest, Vol002ReadWriteOnceWithSeveralPods) {
  const Files good = Render("aws-eks", Engine::kVllm, false, 2);
  EXPECT_TRUE(Of(good, "K3-VOL-002").empty());
  const Files bad = Replaced(good, "weights.yaml", "ReadWriteMany", "ReadWriteOnce");
  auto f = Of(bad, "K3-VOL-002");
  ASSERT_EQ(f.size(), 1u) << FormatFindings(f, false);
  EXPECT_EQ(f[0].file, "weights.yaml");
  EXPECT_EQ(f[0].line, LineOf(bad.at("weights.yaml"), "accessModes"));
  // One pod on a ReadWriteOnce volume is fine.
  EXPECT_TRUE(Of(Render("aws-eks"), "K3-VOL-002").empty());
}

TEST(LintFilesTest, Gw001GkeGatewayClassOffGke) {
  const Files good = Render("aws-eks", Engine::kVllm, true);
  EXPECT_TRUE(Of(good, "K3-GW-001").empty());
  const Files bad = Replaced(good, "gateway.yaml", "gatewayClassName: kgateway",
                             "gatewayClassName: gke-l7-regional-external-managed");
  auto f = Of(bad, "K3-GW-001");
  ASSERT_EQ(f.size(), 1u) << FormatFindings(f, false);
  EXPECT_EQ(f[0].line, LineOf(bad.at("gateway.yaml"), "gatewayClassName"));
  EXPECT_NE(f[0].message.find("aws"), std::string::npos) << f[0].message;
  // On GKE the managed class is right.
  EXPECT_TRUE(Of(Render("gcp-gke", Engine::kVllm, true), "K3-GW-001").empty());
}

TEST(LintFilesTest, Dl001DeprecatedDownloadCommand) {
  const Files good = Render("k8s");
  EXPECT_TRUE(Of(good, "K3-DL-001").empty());
  const Files bad = Replaced(good, "weights.yaml", "hf download", "huggingface-cli download");
  auto f = Of(bad, "K3-DL-001");
  ASSERT_EQ(f.size(), 1u) << FormatFindings(f, false);
  EXPECT_EQ(f[0].line, LineOf(bad.at("weights.yaml"), "huggingface-cli download"));
}

TEST(LintFilesTest, Img001VertexImageFromDockerHub) {
  const Files good = Render("gcp-vertex");
  EXPECT_TRUE(Of(good, "K3-IMG-001").empty());
  const Files bad = Replaced(good, "deploy-vertex.sh", "--container-image-uri=\"$IMAGE\"",
                             "--container-image-uri=vllm/vllm-openai:kimi-k3");
  auto f = Of(bad, "K3-IMG-001");
  ASSERT_EQ(f.size(), 1u) << FormatFindings(f, false);
  EXPECT_EQ(f[0].file, "deploy-vertex.sh");
  EXPECT_EQ(f[0].line, LineOf(bad.at("deploy-vertex.sh"), "gcloud ai models upload"));
}

TEST(LintFilesTest, Par003RanksAboveTheInstanceInEveryFormat) {
  struct Case {
    std::string target, file, from, to;
  };
  const std::vector<Case> cases = {
      {"gcp-vertex", "deploy-vertex.sh", "--tensor-parallel-size,4", "--tensor-parallel-size,8"},
      {"azure-ml", "Dockerfile", "\"--tensor-parallel-size\", \"4\"", "\"--tensor-parallel-size\", \"8\""},
      {"alibaba-pai-eas", "service.json", "--tensor-parallel-size 8",
       "--tensor-parallel-size 8 --pipeline-parallel-size 3"},
      {"alibaba-ack", "arena.sh", "--tensor-parallel-size 8",
       "--tensor-parallel-size 8 --pipeline-parallel-size 3"},
      {"alibaba-ack", "inferenceservice.yaml", "--tensor-parallel-size 8",
       "--tensor-parallel-size 8 --pipeline-parallel-size 3"},
  };
  for (const Case& c : cases) {
    const Files good = Render(c.target, Engine::kVllm, false, 1, true);  // fits one instance
    EXPECT_TRUE(Of(good, "K3-PAR-003").empty())
        << c.target << ": " << FormatFindings(Of(good, "K3-PAR-003"), false);
    const Files bad = Replaced(good, c.file, c.from, c.to);
    auto f = Of(bad, "K3-PAR-003");
    ASSERT_EQ(f.size(), 1u) << c.target << " " << c.file << ": "
                            << FormatFindings(LintFiles(bad, FilesLintOptions()), false);
    EXPECT_EQ(f[0].file, c.file);
    EXPECT_GT(f[0].line, 0);
  }
}

TEST(LintFilesTest, Script001CleanupStopsOnError) {
  const Files good = Render("azure-aks");
  EXPECT_TRUE(Of(good, "K3-SCRIPT-001").empty());
  const Files bad = Replaced(good, "cleanup.sh", "set -uo pipefail", "set -euo pipefail");
  auto f = Of(bad, "K3-SCRIPT-001");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, LineOf(bad.at("cleanup.sh"), "set -euo pipefail"));
  // set -e in a setup script is right.
  EXPECT_NE(good.at("setup-cluster.sh").find("set -euo pipefail"), std::string::npos);
}

TEST(LintFilesTest, Script002ReservationLeftToAComment) {
  const Files good = Render("gcp-gke");
  EXPECT_TRUE(Of(good, "K3-SCRIPT-002").empty());
  Files bad = good;
  bad["cleanup.sh"] =
      "#!/usr/bin/env bash\ngcloud container clusters delete c --quiet\n"
      "# Billing continues until the reservation is released separately:\n"
      "#   gcloud compute reservations delete NAME --zone=ZONE\n";
  auto f = Of(bad, "K3-SCRIPT-002");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, 3);
}

TEST(LintFilesTest, LintPathReadsScriptsAndDockerfiles) {
  const std::string dir = ::testing::TempDir() + "/k3-lint-files";
  std::filesystem::create_directories(dir);
  const Files bad = Replaced(Render("azure-aks"), "cleanup.sh", "set -uo pipefail", "set -euo pipefail");
  for (const auto& [name, text] : bad) {
    std::ofstream(dir + "/" + name) << text;
  }
  auto f = LintPath(dir, FilesLintOptions());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  bool found = false;
  for (const Finding& x : *f) found |= x.rule == "K3-SCRIPT-001" && x.file == dir + "/cleanup.sh";
  EXPECT_TRUE(found) << FormatFindings(*f, false);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace k3::deploy
