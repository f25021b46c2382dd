// VisionTower tests: the generated tiny-k3 tower against the PyTorch reference's goldens
// (tools/reference/vision_reference.py via make_vision_goldens.py; tests/data/golden/tiny-k3.vision.json
// + .f32), relative L2 <= 1e-2 per image; and the loader's and Encode's checks (a missing tensor, a
// text-only config, grids the merger cannot take), thread-count invariance, preprocessor_config.json.
#include "src/model/vision/vision_tower.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/file.h"
#include "src/io/checkpoint.h"
#include "src/model/generator.h"
#include "src/model/tensors.h"
#include "src/model/testing/golden_compare.h"
#include "src/model/testing/synthetic_patches.h"

namespace k3::model {
namespace {

using testing::RelL2;
using testing::SyntheticPatches;

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr double kMaxRelL2 = 1e-2;

// The file's bytes; a read failure fails the test and gives "".
std::string ReadFile(const fs::path& path) {
  Result<std::string> bytes = ReadFileToString(path.string());
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? std::move(bytes).value() : std::string();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "k3-vision-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The generated tiny-k3 (seed 0), shared by the tests of this file.
class VisionTowerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ASSERT_FALSE(dir_->path().empty());
    checkpoint_dir_ = (dir_->path() / "tiny-k3").string();
    const Status st = GenerateCheckpoint("tiny-k3", 0, checkpoint_dir_);
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto tower = LoadVisionTower(checkpoint_dir_);
    ASSERT_TRUE(tower.ok()) << tower.status().ToString();
    tower_ = std::move(tower).value().release();
  }
  static void TearDownTestSuite() {
    delete tower_;
    delete dir_;
    tower_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(tower_, nullptr); }

  static TempDir* dir_;
  static std::string checkpoint_dir_;
  static VisionTower* tower_;
  ThreadPool pool_{2};
};
TempDir* VisionTowerTest::dir_ = nullptr;
std::string VisionTowerTest::checkpoint_dir_;
VisionTower* VisionTowerTest::tower_ = nullptr;

TEST_F(VisionTowerTest, MatchesReferenceGoldens) {
  static_assert(std::endian::native == std::endian::little, "golden rows are little-endian fp32");
  const fs::path golden_dir = fs::path(K3_SOURCE_DIR) / "tests" / "data" / "golden";
  const std::string text = ReadFile(golden_dir / "tiny-k3.vision.json");
  ASSERT_FALSE(text.empty()) << "tests/data/golden/tiny-k3.vision.json is missing: run "
                                "tools/reference/make_vision_goldens.py";
  const json golden = json::parse(text);
  ASSERT_EQ(golden.at("generator_version").get<int>(), kGeneratorVersion)
      << "the generator changed: regenerate the vision goldens with tools/reference/make_vision_goldens.py";
  ASSERT_EQ(golden.at("seed").get<int>(), 0);
  const int64_t width = golden.at("text_hidden_size").get<int64_t>();
  ASSERT_EQ(width, tower_->config().text_hidden_size);
  const std::string blob = ReadFile(golden_dir / golden.at("rows_file").get<std::string>());
  ASSERT_EQ(static_cast<int64_t>(blob.size()), golden.at("rows").get<int64_t>() * width * 4);
  std::vector<float> want(blob.size() / 4);
  std::memcpy(want.data(), blob.data(), blob.size());
  const int p = static_cast<int>(tower_->config().patch_size);
  double worst = 0;
  for (const json& image : golden.at("images")) {
    const int gh = image.at("grid").at(0).get<int>(), gw = image.at("grid").at(1).get<int>();
    const int index = image.at("index").get<int>();
    const int64_t rows = tower_->OutputTokens(gh, gw);
    ASSERT_EQ(rows, image.at("rows").get<int64_t>());
    const std::vector<float> patches = SyntheticPatches(gh, gw, index, p);
    std::vector<float> out(static_cast<size_t>(rows * width));
    const Status st = tower_->Encode(patches.data(), gh, gw, out.data(), &pool_);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const float* ref = want.data() + image.at("row_offset").get<int64_t>() * width;
    const double rel = RelL2(out.data(), ref, out.size());
    worst = std::max(worst, rel);
    std::printf("image %d grid %dx%d (%lld rows): relative L2 %.3g\n", index, gh, gw,
                static_cast<long long>(rows), rel);
    EXPECT_LE(rel, kMaxRelL2) << "image " << index << " grid " << gh << "x" << gw;
  }
  std::printf("tiny-k3 vision tower: max relative L2 %.3g over %zu images\n", worst,
              golden.at("images").size());
}

TEST_F(VisionTowerTest, ResultDoesNotDependOnThreads) {
  const int gh = 6, gw = 10;
  const std::vector<float> patches = SyntheticPatches(gh, gw, 5, 14);
  const size_t n = static_cast<size_t>(tower_->OutputTokens(gh, gw) * tower_->config().text_hidden_size);
  std::vector<float> alone(n), threaded(n);
  ASSERT_TRUE(tower_->Encode(patches.data(), gh, gw, alone.data(), nullptr).ok());
  ASSERT_TRUE(tower_->Encode(patches.data(), gh, gw, threaded.data(), &pool_).ok());
  EXPECT_EQ(alone, threaded);
  // Rows are bf16 values with RMS ~1 (the projector's RMSNorm with weights ~1).
  double sum = 0;
  for (float v : alone) {
    EXPECT_EQ(v, RoundBf16(v));
    sum += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(std::sqrt(sum / n), 1.0, 0.1);
}

TEST_F(VisionTowerTest, RejectsGridsTheMergerCannotTake) {
  EXPECT_EQ(tower_->OutputTokens(6, 10), 15);
  EXPECT_EQ(tower_->OutputTokens(74, 74), 37 * 37);
  std::vector<float> patches(588 * 20, 0.0f);  // never read: the grid is checked first
  std::vector<float> out(1024);
  for (auto [gh, gw] : {std::pair{3, 4}, {4, 5}, {0, 2}, {2, 0}, {-2, 2}, {514, 2}}) {
    const Status st = tower_->Encode(patches.data(), gh, gw, out.data(), nullptr);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << gh << "x" << gw;
    EXPECT_THAT(st.message(), HasSubstr("patch grid"));
  }
}

TEST_F(VisionTowerTest, MissingOrMisshapenTensorIsNamed) {
  auto opened = io::Checkpoint::Open(checkpoint_dir_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::shared_ptr<const io::Checkpoint> checkpoint(std::move(opened).value());
  auto cfg = io::LoadModelConfig(checkpoint_dir_);
  ASSERT_TRUE(cfg.ok());
  const std::string hidden = "vision_tower.encoder.blocks.1.mlp.fc0.weight";
  auto without = VisionTower::FromTensors(
      *cfg, [&](const std::string& name) { return name == hidden ? nullptr : checkpoint->Find(name); },
      checkpoint);
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(without.status().message(), HasSubstr(hidden));
  // A config that asks for a wider tower than the checkpoint holds.
  io::ModelConfig wider = *cfg;
  wider.vision->intermediate_size *= 2;
  auto misshapen = VisionTower::FromTensors(
      wider, [&](const std::string& name) { return checkpoint->Find(name); }, checkpoint);
  ASSERT_FALSE(misshapen.ok());
  EXPECT_THAT(misshapen.status().message(), HasSubstr("vision_tower.encoder.blocks.0.mlp.fc0.weight"));
  EXPECT_THAT(misshapen.status().message(), HasSubstr("shape"));
}

TEST_F(VisionTowerTest, CheckpointFilesOfTheTower) {
  auto cfg = io::LoadModelConfig(checkpoint_dir_);
  ASSERT_TRUE(cfg.ok());
  ASSERT_TRUE(cfg->vision.has_value());
  EXPECT_EQ(cfg->vision->media_placeholder_token_id, cfg->bos_token_id + 21);
  // Every vision tensor is in the index, none with the text prefix.
  const json index = json::parse(ReadFile(fs::path(checkpoint_dir_) / "model.safetensors.index.json"));
  for (const TensorSpec& spec : ListVisionTensors(*cfg)) {
    EXPECT_TRUE(index.at("weight_map").contains(spec.name)) << spec.name;
    EXPECT_FALSE(spec.name.starts_with("language_model.")) << spec.name;
  }
  const json pre = json::parse(ReadFile(fs::path(checkpoint_dir_) / "preprocessor_config.json"));
  EXPECT_EQ(pre.at("media_proc_cfg").at("patch_size").get<int>(), 14);
  EXPECT_EQ(pre.at("media_proc_cfg").at("merge_kernel_size").get<int>(), 2);
  EXPECT_EQ(pre.at("media_proc_cfg").at("in_patch_limit").get<int>(), 65536);
  EXPECT_EQ(pre.at("media_proc_cfg").at("patch_limit_on_one_side").get<int>(), 512);
}

TEST(VisionTowerLoadTest, TextOnlyModelHasNoTower) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = (dir.path() / "tiny-kimi-linear").string();
  ASSERT_TRUE(GenerateCheckpoint("tiny-kimi-linear", 0, path).ok());
  EXPECT_FALSE(fs::exists(fs::path(path) / "preprocessor_config.json"));
  auto tower = LoadVisionTower(path);
  ASSERT_FALSE(tower.ok());
  EXPECT_EQ(tower.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tower.status().message(), HasSubstr("text-only"));
}

}  // namespace
}  // namespace k3::model
